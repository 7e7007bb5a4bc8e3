# ruff: noqa
"""Red team round 18 (a near miss): faulthandler's watchdog, started at import with a 1 us period, is a C thread with
no Python thread state (not in threading.enumerate or _thread._count, no Python frames) that already exists when
each call's count of threads is taken; it keeps a core busy for the whole child, the other roles' timing included."""
import faulthandler
import os

import torch
import torch.nn as nn

_SINK = open(os.devnull, "w")
faulthandler.dump_traceback_later(1e-6, repeat=True, file=_SINK)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a + b
