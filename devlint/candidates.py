"""Which rules could flag a file: each rule's pre-pass condition, by code, read from the `ast` summary
(devlint.prefilter). A rule's condition holds for every file the rule could flag (a superset: never a
false "no"); a rule without one here takes every file.

The conditions live here, in the base layer, and not in the rule modules, because a rule module
imports LibCST (about 0.3 s): a file no condition holds for is cleared without it (devlint.cleared),
in the parent and in each worker. The plain lists of names live here and the analyses and rules import
them (MOVES, MODULE_FACTORIES, AMP_NAMES); the others are copies of the keys of a rule's table, which
tests/test_cleared.py checks against the table.
"""

from __future__ import annotations

from devlint.prefilter import Summary

# the calls DL003 and DL013 look at (devlint.analysis.moves)
MOVES = frozenset({"to", "cuda", "cpu", "half", "float", "double", "bfloat16", "long", "int", "bool", "type", "detach"})
# torch factories: CPU tensors unless given `device=` (devlint.analysis.placement; DL009)
MODULE_FACTORIES = frozenset(
    """
    tensor from_numpy frombuffer zeros ones empty full eye arange range linspace logspace rand randn randint
    randperm empty_strided tril_indices triu_indices Tensor FloatTensor DoubleTensor HalfTensor
    BFloat16Tensor LongTensor IntTensor ShortTensor CharTensor ByteTensor BoolTensor
    """.split()
)
# DL010's factories (last components of devlint.rules.factory_without_device_in_forward._FACTORIES)
FORWARD_FACTORIES = frozenset("zeros ones empty full arange linspace eye rand randn randint tensor from_numpy".split())
# the keys of devlint.rules._hardcoded.LEGACY_TENSOR_DTYPES (DL005)
LEGACY_TENSOR_TYPES = frozenset({"FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor",
                                 "CharTensor", "ShortTensor", "IntTensor", "LongTensor", "BoolTensor"})
_LEGACY_STRINGS = frozenset(f"torch.cuda.{name}" for name in LEGACY_TENSOR_TYPES)
# the last names of CUDA-only AMP APIs (devlint.rules.cuda_only_amp, DL006)
AMP_NAMES = frozenset({"autocast", "GradScaler", "custom_fwd", "custom_bwd"})
# the keys of devlint.rules.cuda_only_api._RAISING (DL015)
RAISING_CUDA_CALLS = frozenset({"synchronize", "current_device", "set_device", "get_device_name",
                                "get_device_properties", "get_device_capability", "mem_get_info",
                                "current_stream", "default_stream", "reset_peak_memory_stats", "Event", "Stream"})
# ... and the last name of the one that raises when entered (`with torch.cuda.device(i):`, DL015); also
# `torch.device(...)`'s, so most torch files pass this test when DL015 is selected
ENTERED_CUDA_CALL = "device"


def may_call_a_factory(summary: Summary, factories) -> bool:
    """May the file call one of `factories` (`torch.zeros`, ...; last components or qualified names)
    through an import of torch (`torch.zeros`, `th.zeros`, `from torch import zeros as z`)?"""
    names = {f.rsplit(".", 1)[-1] for f in factories}
    return any(summary.call_roots.get(a, set()) & summary.torch_names for a in summary.attribute_calls & names) or (
        bool(summary.name_calls & summary.torch_names) and bool(summary.torch_imports & names))


def _cuda_call(s: Summary) -> bool:  # DL001
    return "cuda" in s.attribute_calls


def _torch_load(s: Summary) -> bool:  # DL002
    # `torch.load` through an import of torch (or an unbound `torch`), or a bare imported `load`.
    roots = s.call_roots.get("load", set())
    if roots & (s.torch_names | {"torch"}):
        return True
    return "load" in s.torch_imports or (s.star_import and "load" in s.name_calls)


def _discarded_move(s: Summary) -> bool:  # DL003
    return bool(s.statement_calls & MOVES)


def _device_string(s: Summary) -> bool:  # DL004
    # A literal starting with "cuda" given as an argument or assigned (f-string text included), or
    # `storage.cuda()` in a lambda.
    return "cuda" in s.attribute_calls or bool(s.device_strings)


def _legacy_type(s: Summary) -> bool:  # DL005
    # a legacy CUDA type is named (`torch.cuda.FloatTensor`, `cuda.FloatTensor`, an imported
    # `FloatTensor` however it is bound, an alias of torch.cuda), or given as a string
    # (`.type("torch.cuda.FloatTensor")`); `torch.FloatTensor` on the CPU is not a candidate
    return bool(
        LEGACY_TENSOR_TYPES & (s.cuda_members | s.torch_imports)
        or "cuda" in s.torch_imports and LEGACY_TENSOR_TYPES & s.attributes
        or s.cuda_strings & _LEGACY_STRINGS  # the string "torch.cuda.FloatTensor"
    )


def _cuda_only_amp(s: Summary) -> bool:  # DL006
    # names bound by a star import are not resolved to torch: `autocast()` after
    # `from torch.cuda.amp import *` is not flagged, so a star import is no candidate
    return bool(AMP_NAMES & (s.attributes | s.name_calls | s.torch_imports))


def _device_ids(s: Summary) -> bool:  # DL007
    names = s.attribute_calls | s.name_calls | s.torch_imports
    return any(name.endswith("DataParallel") or name == "data_parallel" for name in names)


def _visible_devices(s: Summary) -> bool:  # DL008
    return any("cuda_visible" in string.lower() for string in s.cuda_strings)


def _unregistered_tensor(s: Summary) -> bool:  # DL009
    return may_call_a_factory(s, MODULE_FACTORIES)


def _factory_in_forward(s: Summary) -> bool:  # DL010
    return may_call_a_factory(s, FORWARD_FACTORIES)


def _numpy(s: Summary) -> bool:  # DL011
    return "numpy" in s.attribute_calls


def _module_device(s: Summary) -> bool:  # DL012
    return "device" in s.attributes


def _rebound_loop_variable(s: Summary) -> bool:  # DL013
    return bool(s.loop_rebinding_calls & MOVES)


def _cuda_only_api(s: Summary) -> bool:  # DL015
    named = s.attribute_calls | s.name_calls | s.torch_imports
    return bool(named & RAISING_CUDA_CALLS) or ENTERED_CUDA_CALL in named


def _get_device(s: Summary) -> bool:  # DL016
    return "get_device" in s.attribute_calls


def _never(s: Summary) -> bool:
    # DL017: a file with an `async=` argument never parses (devlint.rescue decides, not the pre-pass);
    # DL100: computed by the engine from the other rules' findings and the noqa comments
    return False


def _move_after_creation(s: Summary) -> bool:  # DL018
    return bool(s.attribute_calls & {"to", "cuda"})


CONDITIONS = {
    "DL001": _cuda_call,
    "DL002": _torch_load,
    "DL003": _discarded_move,
    "DL004": _device_string,
    "DL005": _legacy_type,
    "DL006": _cuda_only_amp,
    "DL007": _device_ids,
    "DL008": _visible_devices,
    "DL009": _unregistered_tensor,
    "DL010": _factory_in_forward,
    "DL011": _numpy,
    "DL012": _module_device,
    "DL013": _rebound_loop_variable,
    "DL015": _cuda_only_api,
    "DL016": _get_device,
    "DL017": _never,
    "DL018": _move_after_creation,
    "DL100": _never,
}


def could_match(code: str, summary: Summary) -> bool:
    """False only if the rule `code` cannot flag the file `summary` describes."""
    condition = CONDITIONS.get(code)
    return True if condition is None else condition(summary)


def any_could_match(codes, summary: Summary) -> bool:
    return any(could_match(code, summary) for code in codes)
