"""Every rule devlint knows, in code order.

`RULES` is a static table of what selecting rules needs (code, name, on by default, where the class
lives), so that reading the settings, computing cache keys and a fully cached run never import a
rule module, and with it LibCST. The classes themselves are imported on first use: `ALL_RULES`,
`RULES_BY_CODE` (both lazy module attributes) or `rule_classes(codes)`.

A new rule is one row here. tests/test_warm_start.py checks every row against its class (code,
name, default_enabled), and tests/test_rule_examples.py that each rule module is listed.
"""

from __future__ import annotations

from importlib import import_module
from typing import NamedTuple


class RuleInfo(NamedTuple):
    code: str
    name: str
    default_enabled: bool
    module: str  # under devlint.rules
    class_name: str


RULES: tuple[RuleInfo, ...] = (
    RuleInfo("DL001", "cuda-call", True, "cuda_call", "CudaCall"),
    RuleInfo("DL002", "torch-load-without-map-location", True, "torch_load_without_map_location",
             "TorchLoadWithoutMapLocation"),
    RuleInfo("DL003", "discarded-tensor-move", True, "discarded_tensor_move", "DiscardedTensorMove"),
    RuleInfo("DL004", "hardcoded-device-string", True, "hardcoded_device_string", "HardcodedDeviceString"),
    RuleInfo("DL005", "legacy-cuda-tensor-type", True, "legacy_cuda_tensor_type", "LegacyCudaTensorType"),
    RuleInfo("DL006", "cuda-only-amp", True, "cuda_only_amp", "CudaOnlyAmp"),
    RuleInfo("DL007", "hardcoded-device-ids", True, "hardcoded_device_ids", "HardcodedDeviceIds"),
    RuleInfo("DL008", "cuda-visible-devices-misuse", True, "cuda_visible_devices_misuse",
             "CudaVisibleDevicesMisuse"),
    RuleInfo("DL011", "numpy-of-device-tensor", True, "numpy_of_device_tensor", "NumpyOfDeviceTensor"),
    RuleInfo("DL013", "rebound-loop-variable-move", True, "rebound_loop_variable_move", "ReboundLoopVariableMove"),
    RuleInfo("DL015", "cuda-only-api", False, "cuda_only_api", "CudaOnlyApi"),
    RuleInfo("DL016", "get-device-as-index", True, "get_device_as_index", "GetDeviceAsIndex"),
    RuleInfo("DL018", "move-after-creation", False, "move_after_creation", "MoveAfterCreation"),
    RuleInfo("DL100", "unused-noqa", False, "unused_noqa", "UnusedNoqa"),
)
INFO_BY_CODE: dict[str, RuleInfo] = {info.code: info for info in RULES}


_CLASSES: dict[str, type] = {}


def rule_class(code: str):
    """The rule class for a code in RULES (imports its module, and so LibCST)."""
    found = _CLASSES.get(code)
    if found is None:
        info = INFO_BY_CODE[code]
        found = _CLASSES[code] = getattr(import_module(f"{__name__}.{info.module}"), info.class_name)
    return found


def rule_classes(codes) -> tuple:
    """The classes for `codes` (each in RULES), in the order given."""
    return tuple(rule_class(code) for code in codes)


def __getattr__(name: str):
    # ALL_RULES and RULES_BY_CODE import every rule module on first use, then stay as plain globals.
    if name == "ALL_RULES":
        value = rule_classes(info.code for info in RULES)
    elif name == "RULES_BY_CODE":
        value = {rule.code: rule for rule in rule_classes(INFO_BY_CODE)}
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), "ALL_RULES", "RULES_BY_CODE"})
