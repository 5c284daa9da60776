"""Where a value lives, as devlint.analysis.placement answers it: on the CPU, on the run's device, or unknown.
Below placement, so that the analyses placement rests on (devlint.analysis.origins) can name the answer."""

from __future__ import annotations

import enum


class Place(enum.Enum):
    CPU = "cpu"
    DEVICE = "device"
    UNKNOWN = "unknown"


CPU, DEVICE, UNKNOWN = Place.CPU, Place.DEVICE, Place.UNKNOWN
