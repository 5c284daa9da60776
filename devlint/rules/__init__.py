"""Every rule devlint knows, in code order. A test checks that each rule module is listed here."""

from devlint.rules.cuda_call import CudaCall
from devlint.rules.discarded_tensor_move import DiscardedTensorMove
from devlint.rules.torch_load_without_map_location import TorchLoadWithoutMapLocation
from devlint.rules.unused_noqa import UnusedNoqa

ALL_RULES = (CudaCall, TorchLoadWithoutMapLocation, DiscardedTensorMove, UnusedNoqa)
RULES_BY_CODE = {rule.code: rule for rule in ALL_RULES}
