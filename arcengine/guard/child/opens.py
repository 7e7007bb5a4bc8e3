"""What an untrusted worker's Python may open or change on disk, or look into, checked at run time whatever the
spelling.

The gate refuses such paths where they are spelled as constants; a path computed at run time (``"/pr" + "oc"``, a
``pathlib`` join, a symlink the module made) reaches the same file through the same call. An audit hook (PEP 578)
sees every Python-level open and file-system change, and a hook cannot be removed. It refuses:

- opening process memory or descriptors (``/proc/*/mem``, ``fd``, ``map_files``, ``/dev/mem``; resolved through
  links), or the worker's socket by number: ``/proc/self/mem`` opened for writing patches the worker's own timer and
  reply, the socket speaks for the harness;
- opening another process's files under ``/proc`` (``/proc/<pid>/environ`` of the engine or its shell holds the
  API keys; a non-root user's processes may read each other's);
- writing, creating, moving, linking or removing anything outside the worker's own folders (its HOME and
  TMPDIR, and its own code's folder of the campaign's kernel caches): a module written into site-packages and
  imported runs code the gate never read, and a ``.pth`` file there runs in every later Python process, the
  engine's included;
- reaching the interpreter's objects or frames (``gc.get_referents``, ``sys.settrace``...), Python's C API
  through ctypes (a ``Py*`` symbol), or an unpickler's reference to a runner of code or to the harness: however
  the function was reached, the call itself is refused.

It raises, and keeps the first refusal, so the role fails even where the module caught the error. Native code
opens through libc, below any hook: the kernel holds it to the same folders (guard/child/landlock.py).
"""

from __future__ import annotations

import os
import re
import stat
import sys
import tempfile

# A process's memory, its descriptors and mapped files, under any pid, /proc/self or a thread's task folder; and
# physical memory.
PROCESS_MEMORY = re.compile(r"^/(proc/[^/]+(/task/[^/]+)?/(mem|fd|fdinfo|map_files)|dev/(mem|kmem|port))(/|$)")
# A process's own folder under /proc (its environment: the engine's and its shell's hold the API keys).
ANOTHER_PROCESS = re.compile(r"^/proc/(\d+)(/|$)")
# The folders a child may write: its own (HOME, TMPDIR), the campaign's caches its compilers fill, and any the user
# names in ARCENGINE_WRITABLE (os.pathsep between them; the tests' own files).
WRITABLE_ENV = ("HOME", "TMPDIR", "TRITON_CACHE_DIR", "ARCENGINE_NATIVE_CACHE", "TORCHINDUCTOR_CACHE_DIR")
EXTRA_WRITABLE = "ARCENGINE_WRITABLE"
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
# Audit events that change the file system: which arguments are the paths they change, each with the argument that
# holds the folder descriptor it is relative to, if any (shutil.rmtree removes by name under a folder's descriptor).
_CHANGES: dict[str, tuple[tuple[int, int | None], ...]] = {
    "os.remove": ((0, 1),), "os.rmdir": ((0, 1),), "os.mkdir": ((0, 2),), "os.rename": ((0, 2), (1, 3)),
    "os.link": ((0, 2), (1, 3)), "os.symlink": ((1, 2),), "os.chmod": ((0, 2),), "os.chown": ((0, 3),),
    "os.utime": ((0, 3),), "os.truncate": ((0, None),), "os.setxattr": ((0, None),), "os.removexattr": ((0, None),),
    "os.chflags": ((0, None),), "os.lchflags": ((0, None),), "os.lchmod": ((0, None),), "os.lchown": ((0, None),)}

# Audit events that hand Python the interpreter's objects or frames, whatever spelling reached the function: from
# any object to the harness's modules and their globals (a timer swapped for one call and put back), or a hook in
# every frame, the harness's included. Neither torch nor Triton calls one while kernels run.
REACHES_THE_HARNESS = {
    "gc.get_objects": "Python's object graph", "gc.get_referrers": "Python's object graph",
    "gc.get_referents": "Python's object graph", "sys.settrace": "a trace hook in every frame",
    "sys.setprofile": "a profile hook in every frame", "sys.monitoring.register_callback": "a hook in every frame",
}

# What an unpickler may not name, whoever unpickles (torch.compile's caches unpickle their own entries, so the
# unpickler itself stays): runners of code and strings, the interpreter's and the process's modules, importers by
# name, and the harness. Bytes a candidate wrote and had unpickled (a configuration module's load_config, numpy's
# allow_pickle) would otherwise run anything.
UNPICKLED_BUILTINS = {"eval", "exec", "compile", "__import__", "open", "breakpoint", "input", "globals", "locals",
                      "vars", "setattr", "delattr"}
UNPICKLED_MODULES = ("os", "posix", "nt", "sys", "subprocess", "importlib", "ctypes", "_ctypes", "gc", "runpy",
                     "code", "codeop", "marshal", "pickle", "_pickle", "socket", "signal", "threading", "_thread",
                     "inspect", "shutil", "pty", "multiprocessing", "arcengine")
UNPICKLED_MEMBERS = {("torch._utils", "_import_dotted_name"), ("torch", "load"), ("torch.serialization", "load")}

_refused: list[str] = []
_writable: list[str] = []
_own_profile: list[bool] = [False]  # set only while set_profile installs the harness's own hook


def set_profile(function: object) -> None:
    """The harness's own profile hook (own_code.Absent), or None: the one ``sys.setprofile`` let through. The
    flag is up only for the call itself, so a module's code run under the hook cannot remove it unrefused."""
    _own_profile[0] = True
    try:
        sys.setprofile(function)  # type: ignore[arg-type]
    finally:
        _own_profile[0] = False


def writable_folders() -> list[str]:
    """The folders this child may write, from its environment (guard/child/landlock.py confines native code to
    the same ones)."""
    folders = [os.environ.get(name) for name in WRITABLE_ENV] + [tempfile.gettempdir()]
    folders += os.environ.get(EXTRA_WRITABLE, "").split(os.pathsep)
    return sorted({os.path.realpath(folder) for folder in folders if folder})


def install() -> None:
    """Check this process's opens and file-system changes from now on; call before any untrusted module is
    imported (the folders it may write are read from the environment now)."""
    _writable[:] = writable_folders()
    sys.addaudithook(_hook)


def refusal() -> str | None:
    """The first refused open or change, as a failure reason, if any."""
    return _refused[0] if _refused else None


def refuse(reason: str) -> None:
    """Refuse what untrusted code is doing now: kept (the role fails even where the module caught the error) and
    raised."""
    _refused.append(reason)
    raise PermissionError(reason)


def _hook(event: str, args: tuple[object, ...]) -> None:
    if event == "open" and args:
        reason = _refused_open(*args[:3])
    elif event in _CHANGES:
        paths = [_under(args[i], args[fd] if fd is not None and fd < len(args) else None)
                 for i, fd in _CHANGES[event] if i < len(args)]
        if event == "os.mkdir" and paths and paths[0] is not None and os.path.isdir(paths[0]):
            return  # makedirs(..., exist_ok=True) of a folder that is there: no change (it fails with EEXIST)
        reason = next(filter(None, (_outside(path, event) for path in paths)), None)
    elif event in REACHES_THE_HARNESS:
        if event == "sys.setprofile" and _own_profile[0]:
            return
        reason = f"called {event}, {REACHES_THE_HARNESS[event]}: a route to the harness's own code"
    elif event == "pickle.find_class" and len(args) > 1:
        reason = _refused_global(str(args[0]), str(args[1]))
    elif event == "ctypes.dlsym" and len(args) > 1 and isinstance(args[1], str) and args[1].startswith(("Py", "_Py")):
        reason = f"looked up {args[1]} through ctypes: Python's C API reaches the harness's own objects"
    else:
        return
    if reason is not None:
        refuse(reason)


def _refused_global(module: str, name: str) -> str | None:
    """Why an unpickler may not name ``module.name``, if it may not."""
    refused = ((module == "builtins" and name in UNPICKLED_BUILTINS) or (module, name) in UNPICKLED_MEMBERS
               or any(module == root or module.startswith(root + ".") for root in UNPICKLED_MODULES))
    return f"unpickled a reference to {module}.{name}: an unpickler that names it runs any code" if refused else None


def _refused_open(target: object, mode: object = None, flags: object = 0) -> str | None:
    if isinstance(target, int):
        return _refused_descriptor(target)
    if not isinstance(target, str | bytes | os.PathLike):
        return None
    path = os.fsdecode(target)
    forms = _forms(path)  # resolved once: every open of an untrusted worker passes here
    if any(PROCESS_MEMORY.match(form) for form in forms):
        return f"opened {path}, which reaches process memory or descriptors"
    if any((found := ANOTHER_PROCESS.match(form)) and int(found[1]) != os.getpid() for form in forms):
        return f"opened {path}, another process's files (the engine's environment holds the API keys)"
    writes = (isinstance(mode, str) and bool(set(mode) & set("wax+"))) or (
        isinstance(flags, int) and bool(flags & _WRITE_FLAGS))
    if not writes:
        return None
    return _outside(path, "a write") or _linked(path)


def _refused_descriptor(number: int) -> str | None:
    """open() of a descriptor number: a file's or a pipe's pass (subprocess reads its pipes so), as does the null
    device of the standard streams. The rest belong to the harness or the driver: the worker's socket, the GPU
    driver's devices, event counters and memory files, whose writes break the device for the judge's own work or
    forge its messages."""
    try:
        found = os.fstat(number)
    except OSError:
        return None
    if stat.S_ISSOCK(found.st_mode):
        return f"opened descriptor {number}, a socket (the worker's channel to the judge)"
    try:
        name = os.readlink(f"/proc/self/fd/{number}")
    except OSError:
        name = ""
    ordinary = stat.S_ISFIFO(found.st_mode) or (stat.S_ISREG(found.st_mode) and not name.startswith("/memfd:"))
    if ordinary or (stat.S_ISCHR(found.st_mode) and found.st_rdev == os.stat(os.devnull).st_rdev):
        return None
    return f"opened descriptor {number}, {name or 'not a file'} (the harness's or the driver's)"


def _under(target: object, folder: object) -> object:
    """A path given relative to a folder's descriptor, made absolute (anything else as it is)."""
    if not isinstance(folder, int) or folder < 0 or not isinstance(target, str | bytes | os.PathLike):
        return target  # no folder given (-1, AT_FDCWD): relative to the working directory
    path = os.fsdecode(target)
    if os.path.isabs(path):
        return path
    try:
        return os.path.join(os.readlink(f"/proc/self/fd/{folder}"), path)
    except OSError:
        return f"/proc/self/fd/{folder}/{path}"  # unresolvable: outside every folder, so refused


def _linked(path: str) -> str | None:
    """A file with another hard link may be one outside the child's folders, written through a name inside."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(status.st_mode) or status.st_nlink < 2:  # a folder counts its entries' links
        return None
    return f"a write of {path}, a file with {status.st_nlink} hard links (one may lie outside its own folders)"


def _outside(target: object, what: str) -> str | None:
    """Why a change of ``target`` is refused: it lies outside the child's own folders (or is none it can name)."""
    if isinstance(target, int) or target is None:
        return None  # a descriptor the process opened itself
    if not isinstance(target, str | bytes | os.PathLike):
        return None
    path = os.fsdecode(target)
    if os.path.realpath(path) == os.devnull:
        return None
    # Both the path with its folder resolved (a rename, removal or link acts on a last part that is a link) and the
    # file it finally names (a write through a link) must lie in one of its folders.
    if all(any(_within(form, root) for root in _writable) for form in _forms(path)[1:]):
        return None
    label = what if what == "a write" else what.removeprefix("os.")
    return f"{label} of {path}, outside its own folders (a file written there could run in another process)"


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _forms(path: str) -> tuple[str, ...]:
    """The path as written, with its folder's links resolved (/proc/self/fd/N names its descriptor, not the file
    it points to), and fully resolved (a link the module made)."""
    absolute = os.path.abspath(path)
    folder, name = os.path.split(absolute)
    return absolute, os.path.join(os.path.realpath(folder), name), os.path.realpath(absolute)
