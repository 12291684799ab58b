"""perfcast from Python: the shared library libperfcast through ctypes.

    import perfcast
    g = perfcast.load_graph("demo/npz/tile/xla/valid/x.npz")   # dict of numpy arrays
    r = perfcast.rank("tile.safetensors", "demo/npz/tile/xla/valid/x.npz", top=5)
    perfcast.parse_count("8Ki")                                 # 8192 (docs/units.md)
    r = perfcast.roofline(hlo_text, chip="v5e", top=5)          # as `perfcast roofline --json`
    m = perfcast.model("llama3-8b", seq="8Ki", chip="v5e")      # as `perfcast model --json`
    s = perfcast.plan_serve("llama3-70b", chip="v5e", chips=16, context="8Ki")  # plan serve
    t = perfcast.plan_train("llama3-8b", chip="v5e", chips=256, batch_tokens="4M")  # plan train
    p = perfcast.tune("tile.safetensors", "x.npz", top=3, max_scored=512)  # as `perfcast tune --json`
    v = perfcast.validate("data/calibration/training_runs.json")         # as `perfcast validate --json`

Results are plain dicts (and numpy arrays) with the fields of the matching
`perfcast ... --json` output; failures raise perfcast.Error carrying the
library's message. The library is found through $PERFCAST_LIB (the .so or its
folder), next to this package, or the standard library paths.
"""
import ctypes
import json
import os

import numpy as np

from ._lib import Error, PcArray, PcError, check, enc, lib

__all__ = ["Error", "version", "parse_count", "parse_bytes", "load_graph", "rank", "query",
           "roofline", "model", "plan_serve", "plan_train", "tune", "validate"]

# pc_dtype (perfcast/npz.h) -> numpy; F16 is converted to F32 by the reader
_DTYPES = {0: np.bool_, 1: np.uint8, 2: np.int8, 3: np.uint16, 4: np.int16, 5: np.uint32,
           6: np.int32, 7: np.uint64, 8: np.int64, 9: np.float32, 10: np.float32,
           11: np.float64}


def version():
    """The library's version string ("0.1.0")."""
    return lib().pc_version().decode()


def _parse(fn, s):
    err = PcError()
    out = ctypes.c_double()
    check(fn(enc(str(s)), ctypes.byref(out), ctypes.byref(err)), err)
    return out.value


def parse_count(s):
    """A count in perfcast's one vocabulary: "8k" -> 8000.0, "8Ki" -> 8192.0,
    "300B" -> 3e11 (docs/units.md)."""
    return _parse(lib().pc_parse_count, s)


def parse_bytes(s):
    """A byte size: "512MB" -> 5.12e8, "1GiB" -> 1073741824.0."""
    return _parse(lib().pc_parse_bytes, s)


# PC_MEMORY_AUTO (perfcast/npz.h): half the memory available at each load
MEMORY_AUTO = 2 ** 64 - 1


def _max_memory(max_memory):
    """The max_memory= keyword as the library's budget in bytes: None (the
    default) = half the available memory, as the CLI without --max-memory; an
    int is bytes; a str a size with a unit ("512MiB", "2GB") as
    perfcast.parse_bytes reads it."""
    if max_memory is None:
        return MEMORY_AUTO
    if isinstance(max_memory, str):
        max_memory = parse_bytes(max_memory)
    if isinstance(max_memory, bool) or not isinstance(max_memory, (int, float)):
        raise Error("max_memory expects None, a number of bytes or a size such as '512MiB', "
                    "got %r" % (max_memory,), "arg")
    if not max_memory >= 1 or max_memory >= MEMORY_AUTO:
        raise Error("max_memory expects a size of at least 1 byte, got %r" % (max_memory,),
                    "arg")
    return int(max_memory)


def load_graph(path, max_memory=None):
    """Every array of a TpuGraphs .npz file (or any .npz) as {key: numpy array},
    read by the library's reader (the checks of `perfcast info`/`check` on
    shapes and sizes apply). max_memory: the memory budget of each array's
    read (see _max_memory; default half the available memory); over it,
    perfcast.Error (status "nomem") names the file, the member and the sizes."""
    L = lib()
    budget = _max_memory(max_memory)
    err = PcError()
    z = ctypes.c_void_p()
    check(L.pc_npz_open(enc(path), ctypes.byref(z), ctypes.byref(err)), err)
    L.pc_npz_set_max_memory(z, budget)
    out = {}
    try:
        for i in range(L.pc_npz_count(z)):
            key = L.pc_npz_key(z, i).decode()
            a = PcArray()
            check(L.pc_npz_read(z, i, ctypes.byref(a), ctypes.byref(err)), err)
            try:
                dt = np.dtype(_DTYPES[a.dtype])
                shape = tuple(a.shape[d] for d in range(a.ndim))
                n = int(np.prod(shape, dtype=np.int64)) if shape else 1
                if n and a.data:
                    buf = (ctypes.c_char * (n * dt.itemsize)).from_address(a.data)
                    arr = np.frombuffer(buf, dtype=dt, count=n).reshape(shape).copy()
                else:
                    arr = np.zeros(shape, dtype=dt)
            finally:
                L.pc_array_free(ctypes.byref(a))
            out[key] = arr
    finally:
        L.pc_npz_close(z)
    return out


def rank(model, path, top=10, threads=0, tta=1, tta_seed=1, max_memory=None):
    """The configs of one dataset graph (.npz or cache folder) best first by a
    checkpoint of `perfcast train`, as `perfcast rank --model MODEL FILE --json`
    (docs/json.md): {"file", "collection", "input": "npz", "graphs": [{"name",
    "kind", "configs", "configurable_nodes", "top": [{"rank", "config", "score",
    "spread", "runtime", "spelled", "value"}], "true_best"}]}, None where a
    field does not apply. top=0: every config. max_memory: the memory budget of
    the checkpoint's and the graph's load, as `rank --max-memory` (None: half
    the available memory; bytes; or "512MiB")."""
    L = lib()
    budget = _max_memory(max_memory)
    err = PcError()
    p = ctypes.c_void_p()
    g = ctypes.c_void_p()
    check(L.pc_predictor_load_max(enc(model), int(threads), budget, ctypes.byref(p),
                                  ctypes.byref(err)), err)
    try:
        check(L.pc_predictor_set_tta(p, int(tta), int(tta_seed), ctypes.byref(err)), err)
        opts = L.pc_load_opts_default()
        opts.threads = int(threads)
        opts.max_memory = budget
        check(L.pc_graph_load(enc(path), ctypes.byref(opts), ctypes.byref(g), ctypes.byref(err)),
              err)
        n = L.pc_graph_num_configs(g)
        if n < 1:
            raise Error("%s has no configs (rank the HLO program itself to get candidates)"
                        % L.pc_graph_path(g).decode(), "arg")
        scores = (ctypes.c_double * n)()
        spread = (ctypes.c_double * n)()
        ensemble = L.pc_predictor_members(p) > 1
        check(L.pc_predictor_score_spread(p, g, scores, spread if ensemble else None,
                                          ctypes.byref(err)), err)
        idx = (ctypes.c_size_t * n)()
        got = ctypes.c_size_t()
        check(L.pc_topk_indices(scores, n, n, idx, ctypes.byref(got), ctypes.byref(err)), err)
        rt_p = L.pc_graph_config_runtime(g)
        rt = [rt_p[k] for k in range(n)] if rt_p else []
        have_rt = any(v > 0 for v in rt)
        order = [idx[r] for r in range(got.value)]
        shown = order if top <= 0 else order[:top]
        rows = [{"rank": r + 1, "config": c, "score": scores[c],
                 "spread": spread[c] if ensemble else None,
                 "runtime": rt[c] if have_rt else None, "spelled": None, "value": None}
                for r, c in enumerate(shown)]
        best = None
        if have_rt:
            b = min(range(n), key=lambda k: (rt[k], k))
            best = {"config": b, "runtime": rt[b], "rank": order.index(b) + 1}
        coll = L.pc_predictor_collection(p)  # pc_collection_kind: 2 = PC_KIND_LAYOUT
        name = os.path.basename(str(path))
        kind = "module" if L.pc_collection_kind(coll) == 2 else "kernel"
        graph = {"name": name, "kind": kind, "configs": n,
                 "configurable_nodes": None, "top": rows, "true_best": best}
        return {"file": str(path), "collection": L.pc_collection_name(coll).decode(),
                "input": "npz", "graphs": [graph]}
    finally:
        L.pc_graph_free(g)
        L.pc_predictor_free(p)


def query(name, request=None, **kw):
    """Runs one of the library's queries (perfcast/query.h: "roofline", ...) on a
    request dict (keys: the command's flags with '_' for '-'; None values are
    left out) and returns the document the command prints with --json, as
    plain Python objects. The CLI prints this very document."""
    L = lib()
    q = L.pc_query_parse(enc(name))
    if q < 0:
        raise Error("unknown query '%s'" % name, "arg")
    req = dict(request or {})
    req.update(kw)
    req = {k: v for k, v in req.items() if v is not None}
    err = PcError()
    out = ctypes.c_void_p()
    check(L.pc_query_json(q, json.dumps(req).encode(), ctypes.byref(out), ctypes.byref(err)),
          err)
    try:
        return json.loads(ctypes.string_at(out.value).decode())
    finally:
        L.pc_query_free(out)


def _is_hlo_text(s):
    return "\n" in s or s.lstrip().startswith("HloModule")


def _matmuls(m):
    """(B, D, F), "B,D,F" or a list of them -> a list of "B,D,F" strings."""
    if m is None:
        return None
    if isinstance(m, str) or (len(m) == 3 and all(isinstance(x, (int, float)) for x in m)):
        m = [m]
    return [x if isinstance(x, str) else ",".join(str(v) for v in x) for x in m]


def roofline(hlo=None, chip=None, *, matmul=None, op=None, ops=None, stage=None, module=None,
             while_trips=None, loop_ops=None, mesh=None, top=None, dtype=None,
             weight_dtype=None, comm_bw=None, chips_file=None, max_memory=None):
    """Roofline time of each op on one chip, as `perfcast roofline --json`
    (docs/json.md): {"chip", "dtype", "peak_flops", "hbm_bw",
    "critical_intensity", "hlo", "ops": [{"name", "kind", "flops", "bytes",
    "intensity", "time", "bound", "share", ...}], "others", "total", ...}.

    hlo: HLO text (e.g. jax.jit(f).lower(*args).compile().as_text()), or the
    path of an HLO file / XLA dump directory (stage="before"/"after"). Or ops
    given as matmul=(B, D, F) (or a list of them), op="elementwise
    shape=8192x4096" (or a list), ops=PATH (an op file). chip: "v5e",
    "h100", ... (perfcast chips). top=0: every op in program order (default
    10 slowest). comm_bw accepts "4.5e10" or a number (bytes/s). max_memory:
    the memory budget of reading and parsing hlo, as `roofline --max-memory`
    (None: half the available memory; bytes; or "512MiB")."""
    budget = _max_memory(max_memory)
    req = {"chip": chip, "matmul": _matmuls(matmul),
           "op": [op] if isinstance(op, str) else op, "ops": _path(ops), "stage": stage,
           "module": module, "while_trips": while_trips, "loop_ops": loop_ops, "mesh": mesh,
           "top": top, "dtype": dtype, "weight_dtype": weight_dtype, "comm_bw": comm_bw,
           "chips_file": _path(chips_file),
           "max_memory": None if budget == MEMORY_AUTO else budget}
    if hlo is not None:
        if isinstance(hlo, bytes):
            hlo = hlo.decode()
        if isinstance(hlo, str) and _is_hlo_text(hlo):
            req["hlo_text"] = hlo
        else:
            req["hlo"] = _path(hlo)
    return query("roofline", req)


def _path(p):
    return os.fspath(p) if p is not None else None


def _config(config):
    """A config for the model queries: a dict (a config.json's fields), a preset
    name or a path."""
    if config is None or isinstance(config, dict):
        return config
    if isinstance(config, bytes):
        config = config.decode()
    return _path(config)


def model(config=None, **kw):
    """Parameters, FLOPs per token, training memory and KV cache of a transformer,
    as `perfcast model --json` (docs/json.md): {"model", "params",
    "flops_per_token", "train_memory", "kv_cache", "weight_bytes", "chip",
    "moe_critical_batch", "mfu"}.

    config: a Hugging Face config.json as a dict, a built-in config name
    ("llama3-8b", ...) or the path of a config.json; or none, with the model's
    fields as keywords (layers=, d_model=, d_ff=, heads=, vocab=, ...), which
    also override a config's. Keywords are the command's flags with '_' for
    '-': seq="8Ki", batch_tokens="4M", remat="tensors:4", attention="causal",
    weight_dtype="int8", kv_dtype, optimizer, chip="v5e" (MoE critical batch),
    mfu_step_time=S with chips=N and batch_tokens, or gpu_hours=H with
    tokens="15T" (MFU of a measured run)."""
    if "chips_file" in kw:
        kw["chips_file"] = _path(kw["chips_file"])
    return query("model", kw, config=_config(config))


def plan_serve(config=None, **kw):
    """Serving tables and the calibrated continuous-batching model, as `perfcast
    plan serve --json` (docs/json.md): {"model", "chip", "slice", "tp",
    "replicas", ..., "contexts": [{"context", "max_batch", "batches": [...],
    "calibrated", ...}], "fits"}. "fits" is False when the weights or a
    requested batch do not fit (the command's exit status 1).

    config: a built-in config name ("llama3-70b"), the path of a config.json
    or a config.json as a dict (preset= also names a built-in one). Keywords
    are the command's flags with '_' for '-': chip="v5e", chips=16 or
    slice="4x4", context=8192 / "8Ki" / [2048, "8Ki"] / "2Ki,8Ki", batch=N
    (default: the doubling table), prefill_tokens, decode_tokens,
    weight_dtype, kv_dtype, efficiency, price_per_chip_hour, attention,
    book=True, calibration="builtin"|"none"|PATH, concurrency, replicas, tp,
    ep, attention_dp=True, chips_file. A calibrated block that cannot be
    evaluated carries the library's wording in its "error" (the command says
    it in flag names)."""
    for k in ("chips_file", "calibration"):
        if k in kw:
            kw[k] = _path(kw[k])
    ctx = kw.get("context")
    if isinstance(ctx, str) and "," in ctx:
        kw["context"] = [c for c in ctx.split(",") if c]
    return query("plan_serve", kw, config=_config(config))


def plan_train(config=None, **kw):
    """Parallelism plans for training, as `perfcast plan train --json`
    (docs/json.md): {"model", "params", "chip", "chips", "slice", ...,
    "search", "thresholds", "plans": [{"axes", "zero", "remat",
    "micro_batches", "memory_per_chip", "step_parts", "step_time", "mfu",
    "calibrated_step_time", ...}], "least_memory_plan"}. No plan fitting is
    not an error: "plans" is empty and "least_memory_plan" says how close the
    search came (the command exits 1 then).

    config: a built-in config name, the path of a config.json or its fields
    as a dict (preset= also names a built-in one). Keywords are the command's
    flags with '_' for '-': chip="v5p", chips=1024 or slice="4x4x8",
    batch_tokens="4Mi" (required), seq, tokens="15T", top (1..100, default
    10), remat="none,full" (or a list), zero="1,3" (or a list), dp, fsdp, tp,
    pp, ep, max_micro, micro, micro_batch_size, vp, cp, optimizer,
    master_weights=True, weight_dtype, grad_dtype, act_dtype, efficiency,
    price_per_chip_hour, attention, book=True, calibration="builtin"|"none"|PATH,
    chips_file. search["seconds"] is the search's wall time; a
    search["not_priced_reason"] carries the library's wording (the command
    says it in flag names)."""
    for k in ("chips_file", "calibration"):
        if k in kw:
            kw[k] = _path(kw[k])
    return query("plan_train", kw, config=_config(config))


def _tune_configs(entry):
    if "configs" in entry:
        rows = entry["configs"]
        entry["configs"] = np.asarray(rows, dtype=np.float32).reshape(len(rows), -1)
    return entry


def tune(model=None, path=None, *, out=None, top=None, budget_s=None, seed=None, batch=None,
         patience=None, max_scored=None, candidates=None, kernel=None, threads=None, risk=None,
         max_changes=None, tile_max_changes=None, tile_risk=None, tile_new_sizes=None,
         oracle=None, synth_seed=None, synth_scale=None, synth_graphs=None,
         synth_layout_nodes=None, synth_tile_configs=None, configs=True, max_memory=None):
    """Searches one graph's configuration space for the configs a checkpoint of
    `perfcast train` (or, oracle=True and no model, synth's simulator) rates
    fastest, as `perfcast tune --model MODEL PATH --json` (docs/json.md).

    path: a TpuGraphs .npz (or cache folder) -> {"graph", "kind", "vars",
    "log10_space", "scored", "rounds", "seconds", "stop", "risk", ...,
    "default_score", "input_best", "input_best_score", "scores", "out"}; an
    HLO program -> a list of those, one per module (layout) or kernel (tile),
    each with "proposals" in rank's notation. With configs=True (the default)
    each also carries "configs": the proposals themselves as a numpy float32
    array (k, width), best first (tile: 24 floats, layout: config nodes x 18,
    as config_feat / node_config_feat). out=PATH writes them as a .npz too.
    Keywords are the command's flags with '_' for '-'; budget_s stops on
    time, max_scored reproducibly; max_memory as load_graph's."""
    budget = _max_memory(max_memory)
    req = {"model": _path(model), "file": _path(path), "out": _path(out), "top": top,
           "budget_s": budget_s, "seed": seed, "batch": batch, "patience": patience,
           "max_scored": max_scored, "candidates": candidates, "kernel": kernel,
           "threads": threads, "risk": risk, "max_changes": max_changes,
           "tile_max_changes": tile_max_changes, "tile_risk": tile_risk,
           "tile_new_sizes": tile_new_sizes, "oracle": oracle, "synth_seed": synth_seed,
           "synth_scale": synth_scale, "synth_graphs": synth_graphs,
           "synth_layout_nodes": synth_layout_nodes, "synth_tile_configs": synth_tile_configs,
           "configs": bool(configs) or None,
           "max_memory": None if budget == MEMORY_AUTO else budget}
    doc = query("tune", req)
    if isinstance(doc, list):
        return [_tune_configs(e) for e in doc]
    return _tune_configs(doc)


def validate(runs, calibration=None, *, loso=None, kind=None, huber=None, prior_weight=None):
    """Every measured run of the runs files (a path or a list of up to 8;
    schema: data/calibration/SOURCE_README.md) predicted and compared with
    its measurement, as `perfcast validate RUNS... --json` (docs/json.md):
    {"calibration", "runs": [{"id", "kind", "source", "chip", "chips",
    "metric", "measured", "expressed", "predicted", "error", "ideal", ...}],
    "summary": {"median_abs_error", ..., "train": {..., "by_source",
    "by_chip"}, "serve": {...}}, "invalid_runs": [messages]}.

    calibration: "builtin" (default), "none" or the path of a `perfcast
    calibrate` file; loso=True: leave one source out instead (huber and
    prior_weight tune its fits); kind: "train", "serve" or "all"."""
    if isinstance(runs, (str, bytes, os.PathLike)):
        runs = [runs]
    runs = [os.fsdecode(r) for r in runs]
    return query("validate", {"runs": runs, "calibration": _path(calibration), "loso": loso,
                              "kind": kind, "huber": huber, "prior_weight": prior_weight})
