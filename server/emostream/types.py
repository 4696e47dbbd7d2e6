"""Type aliases shared across the package."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatAudio = npt.NDArray[np.float32]  # mono, [-1, 1]
Int16Audio = npt.NDArray[np.int16]
Frames = npt.NDArray[np.float32]  # [channels, T]
