"""Finding and declaring libperfcast (ctypes). Internal to the package."""
import ctypes
import ctypes.util
import os

PC_ERROR_MSG_MAX = 1024
PC_MAX_DIMS = 8

STATUS = ("ok", "arg", "io", "format", "unsupported", "range", "nomem", "invalid", "notfound")


class Error(Exception):
    """A failure reported by libperfcast: .message is the library's message
    (naming the file, the field and what was expected), .status its kind
    ("io", "format", "arg", ...)."""

    def __init__(self, message, status="arg"):
        super().__init__(message)
        self.message = message
        self.status = status


class PcError(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * PC_ERROR_MSG_MAX)]


class PcArray(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("ndim", ctypes.c_int),
                ("shape", ctypes.c_int64 * PC_MAX_DIMS), ("data", ctypes.c_void_p),
                ("priv_base_", ctypes.c_void_p), ("priv_len_", ctypes.c_size_t)]


class PcLoadOpts(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("kind", ctypes.c_int),
                ("max_resident_config_bytes", ctypes.c_uint64), ("threads", ctypes.c_int),
                ("max_memory", ctypes.c_uint64)]


def _candidates():
    env = os.environ.get("PERFCAST_LIB")
    if env:
        yield env  # a file, or a folder holding libperfcast.so
        yield os.path.join(env, "libperfcast.so")
        return
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, "libperfcast.so")
    found = ctypes.util.find_library("perfcast")
    if found:
        yield found
    for d in ("/usr/local/lib", "/usr/local/lib64", "/usr/lib", "/usr/lib64",
              "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu"):
        yield os.path.join(d, "libperfcast.so")


def _open():
    tried = []
    for path in _candidates():
        if os.path.sep in path and not os.path.isfile(path):
            tried.append(path)
            continue
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise Error("libperfcast.so not found: build it with cmake -DBUILD_SHARED_LIBS=ON and set "
                "PERFCAST_LIB to its path (tried: %s)" % ", ".join(tried), "notfound")


def _declare(lib):
    P, I, I64, D, S, V = (ctypes.c_void_p, ctypes.c_int, ctypes.c_int64, ctypes.c_double,
                          ctypes.c_char_p, None)
    E = ctypes.POINTER(PcError)
    A = ctypes.POINTER(PcArray)
    sigs = {
        "pc_version": (S, []),
        "pc_status_name": (S, [I]),
        "pc_parse_count": (I, [S, ctypes.POINTER(D), E]),
        "pc_parse_bytes": (I, [S, ctypes.POINTER(D), E]),
        "pc_npz_open": (I, [S, ctypes.POINTER(P), E]),
        "pc_npz_close": (V, [P]),
        "pc_npz_count": (I, [P]),
        "pc_npz_key": (S, [P, I]),
        "pc_npz_read": (I, [P, I, A, E]),
        "pc_array_free": (V, [A]),
        "pc_load_opts_default": (PcLoadOpts, []),
        "pc_graph_load": (I, [S, ctypes.POINTER(PcLoadOpts), ctypes.POINTER(P), E]),
        "pc_graph_free": (V, [P]),
        "pc_graph_num_configs": (I64, [P]),
        "pc_graph_config_runtime": (ctypes.POINTER(I64), [P]),
        "pc_graph_path": (S, [P]),
        "pc_predictor_load": (I, [S, I, ctypes.POINTER(P), E]),
        "pc_predictor_load_max": (I, [S, I, ctypes.c_uint64, ctypes.POINTER(P), E]),
        "pc_npz_set_max_memory": (V, [P, ctypes.c_uint64]),
        "pc_predictor_free": (V, [P]),
        "pc_predictor_collection": (I, [P]),
        "pc_predictor_members": (I, [P]),
        "pc_predictor_set_tta": (I, [P, I, ctypes.c_uint64, E]),
        "pc_predictor_score_spread": (I, [P, P, ctypes.POINTER(D), ctypes.POINTER(D), E]),
        "pc_topk_indices": (I, [ctypes.POINTER(D), ctypes.c_size_t, ctypes.c_size_t,
                                ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t),
                                E]),
        "pc_collection_name": (S, [I]),
        "pc_collection_kind": (I, [I]),
        "pc_query_parse": (I, [S]),
        "pc_query_json": (I, [I, S, ctypes.POINTER(P), E]),
        "pc_query_free": (V, [P]),
    }
    for name, (res, args) in sigs.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args
    return lib


_LIB = None


def lib():
    """The loaded library (opened on first use)."""
    global _LIB
    if _LIB is None:
        _LIB = _declare(_open())
    return _LIB


def check(status, err):
    """Raises Error with the library's message when status is not PC_OK."""
    if status != 0:
        name = STATUS[status] if 0 <= status < len(STATUS) else str(status)
        msg = err.msg.decode("utf-8", "replace") or name
        raise Error(msg, name)


def enc(s):
    return os.fsencode(s) if s is not None else None
