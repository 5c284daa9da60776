"""Every rule devlint knows, in code order. A test checks that each rule module is listed here."""

from devlint.rules.cuda_call import CudaCall
from devlint.rules.cuda_only_amp import CudaOnlyAmp
from devlint.rules.cuda_only_api import CudaOnlyApi
from devlint.rules.cuda_visible_devices_misuse import CudaVisibleDevicesMisuse
from devlint.rules.discarded_tensor_move import DiscardedTensorMove
from devlint.rules.hardcoded_device_ids import HardcodedDeviceIds
from devlint.rules.hardcoded_device_string import HardcodedDeviceString
from devlint.rules.legacy_cuda_tensor_type import LegacyCudaTensorType
from devlint.rules.torch_load_without_map_location import TorchLoadWithoutMapLocation
from devlint.rules.unused_noqa import UnusedNoqa

ALL_RULES = (
    CudaCall,
    TorchLoadWithoutMapLocation,
    DiscardedTensorMove,
    HardcodedDeviceString,
    LegacyCudaTensorType,
    CudaOnlyAmp,
    HardcodedDeviceIds,
    CudaVisibleDevicesMisuse,
    CudaOnlyApi,
    UnusedNoqa,
)
RULES_BY_CODE = {rule.code: rule for rule in ALL_RULES}
