"""The rule table: every rule devlint knows, in code order (data of the base layer; the rules are plugins
of devlint.rules, loaded by module name).

`RULES` is a static table of what selecting rules needs (code, name, on by default, where the class
lives), so that reading the settings, computing cache keys and a fully cached run never import a
rule module, and with it LibCST. The classes themselves are imported on first use: `ALL_RULES`,
`RULES_BY_CODE` (both lazy module attributes) or `rule_classes(codes)`.

A new rule is a module of devlint.rules, one row here and its pre-pass condition in devlint.candidates.
tests/test_warm_start.py checks every row against its class (code, name, default_enabled),
tests/test_rule_examples.py that each rule module is listed, tests/test_cleared.py that each has a condition.
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
    RuleInfo("DL009", "unregistered-module-tensor", True, "unregistered_module_tensor", "UnregisteredModuleTensor"),
    RuleInfo("DL010", "factory-without-device-in-forward", True, "factory_without_device_in_forward",
             "FactoryWithoutDeviceInForward"),
    RuleInfo("DL011", "numpy-of-device-tensor", True, "numpy_of_device_tensor", "NumpyOfDeviceTensor"),
    RuleInfo("DL012", "module-device-attribute", True, "module_device_attribute", "ModuleDeviceAttribute"),
    RuleInfo("DL013", "rebound-loop-variable-move", True, "rebound_loop_variable_move", "ReboundLoopVariableMove"),
    RuleInfo("DL015", "cuda-only-api", False, "cuda_only_api", "CudaOnlyApi"),
    RuleInfo("DL016", "get-device-as-index", True, "get_device_as_index", "GetDeviceAsIndex"),
    RuleInfo("DL017", "cuda-async-argument", True, "cuda_async_argument", "CudaAsyncArgument"),
    RuleInfo("DL018", "move-after-creation", False, "move_after_creation", "MoveAfterCreation"),
    RuleInfo("DL100", "unused-noqa", False, "unused_noqa", "UnusedNoqa"),
)
INFO_BY_CODE: dict[str, RuleInfo] = {info.code: info for info in RULES}


class RuntimeErrorRow(NamedTuple):
    exception: str  # the exception's class name
    text: str  # a piece of its message
    code: str  # the rule whose pattern raises it


# The errors a rule prevents, as a program raises them at run time (under `devlint run --virtual-gpu`,
# or a GPU): the run's error report names the rules of every row that matches (rows of codes not in
# RULES are skipped). A rule that prevents an error is one row here.
RUNTIME_ERRORS: tuple[RuntimeErrorRow, ...] = (
    RuntimeErrorRow("AssertionError", "Torch not compiled with CUDA enabled", "DL001"),
    RuntimeErrorRow("RuntimeError", "No CUDA GPUs are available", "DL001"),
    RuntimeErrorRow("RuntimeError", "Attempting to deserialize object on a CUDA device", "DL002"),
    RuntimeErrorRow("RuntimeError", "invalid device ordinal", "DL007"),
    RuntimeErrorRow("RuntimeError", "Expected all tensors to be on the same device", "DL009"),
    RuntimeErrorRow("RuntimeError", "Expected all tensors to be on the same device", "DL010"),
    RuntimeErrorRow("RuntimeError", "expected self and mask to be on the same device", "DL009"),
    RuntimeErrorRow("RuntimeError", "expected self and mask to be on the same device", "DL010"),
    RuntimeErrorRow("TypeError", "can't convert cuda", "DL011"),
    RuntimeErrorRow("AttributeError", "object has no attribute 'device'", "DL012"),
    # (the moved copies are dropped and the CPU items meet the device later)
    RuntimeErrorRow("RuntimeError", "Expected all tensors to be on the same device", "DL013"),
    RuntimeErrorRow("RuntimeError", "Device index must not be negative", "DL016"),
)


def rules_for_error(exception: BaseException) -> list[RuleInfo]:
    """The rules whose pattern raises `exception` (by RUNTIME_ERRORS), in code order."""
    message = str(exception)
    names = {cls.__name__ for cls in type(exception).__mro__}
    codes = {row.code for row in RUNTIME_ERRORS if row.exception in names and row.text in message}
    return [info for info in RULES if info.code in codes]


_CLASSES: dict[str, type] = {}


def rule_class(code: str):
    """The rule class for a code in RULES (imports its module, and so LibCST)."""
    found = _CLASSES.get(code)
    if found is None:
        info = INFO_BY_CODE[code]
        found = _CLASSES[code] = getattr(import_module(f"devlint.rules.{info.module}"), info.class_name)
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
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")  # (devlint.rules asks the same)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), "ALL_RULES", "RULES_BY_CODE"})
