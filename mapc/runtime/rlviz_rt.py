"""Runtime units for RLViz adapters: the process protocol around a mapping program.

RLViz runs ``python3 adapter.py probe|stream --request PATH``. These units
read the request as strictly as ``adapter-request.schema.json`` describes it,
answer ``probe`` from a bounded prefix, stream canonical NDJSON for
``stream``, keep stdout for protocol JSON only, and turn every failure into a
single line on stderr with a nonzero exit: 2 for a malformed invocation or
request, 1 when the source cannot be read or mapped.

"""

import json
import os
import sys

from .mapping_rt import _RFC3339, MappingError, contained, warn_stderr, one_line


RLVIZ_API_VERSION = "rlviz.dev/v1alpha1"
RLVIZ_MAX_REQUEST_BYTES = 1 << 20


#: what RLViz reads of an adapter's stream (``internal/plugins/host.go``) and of one record
#: (``internal/model/decoder.go``): the stream stops before it would pass them
RLVIZ_OUTPUT_LIMITS = (32 << 20, 8 << 20, "RLViz")


_RLVIZ_REQUEST_KEYS = ("api_version", "operation", "source", "options", "limits")
_RLVIZ_SOURCE_KEYS = ("path", "root", "kind", "size_bytes", "modified_at")
_RLVIZ_LIMIT_KEYS = ("probe_bytes", "timeout_ms")


class RequestError(Exception):
    """The invocation or the request file is malformed (exit status 2)."""


def rlviz_keys(obj, allowed, required, where):
    """Reject members outside ``allowed`` and require ``required`` (the request schema's rules)."""
    if not isinstance(obj, dict):
        raise RequestError(f"{where} must be an object")
    for key in obj:
        if key not in allowed:
            raise RequestError(f"{where} has unknown field {key!r}")
    for key in required:
        if key not in obj:
            raise RequestError(f"{where} is missing {key!r}")


def rlviz_int(value, minimum, where):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise RequestError(f"{where} must be an integer >= {minimum}")
    return value


def rlviz_parse_argv(argv):
    """``(operation, request path)`` from ``probe|stream --request PATH``."""
    operation, path = None, None
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--request" and args:
            path = args.pop(0)
        elif arg.startswith("--request="):
            path = arg[len("--request=") :]
        elif arg in ("probe", "stream") and operation is None:
            operation = arg
        else:
            raise RequestError(
                f"unexpected argument {arg[:80]!r}; usage: adapter.py probe|stream --request PATH"
            )
    if operation is None or not path:
        raise RequestError("usage: adapter.py probe|stream --request PATH")
    return operation, path


def rlviz_read_request(operation, path):
    """Load and check the request file RLViz wrote for this operation."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(RLVIZ_MAX_REQUEST_BYTES + 1)
    except OSError as exc:
        raise RequestError(f"cannot read the request file: {exc.strerror or exc}") from None
    if len(data) > RLVIZ_MAX_REQUEST_BYTES:
        raise RequestError("request file is too large")
    try:
        req = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise RequestError("request file is not valid JSON") from None
    rlviz_keys(req, _RLVIZ_REQUEST_KEYS, ("api_version", "operation", "source"), "request")
    if req["api_version"] != RLVIZ_API_VERSION:
        raise RequestError(f"unsupported api_version; this adapter speaks {RLVIZ_API_VERSION}")
    if req["operation"] != operation:
        raise RequestError("request operation does not match the command")
    source = req["source"]
    rlviz_keys(source, _RLVIZ_SOURCE_KEYS, ("path", "root"), "request source")
    for key in ("path", "root"):
        if not isinstance(source[key], str) or not source[key] or not os.path.isabs(source[key]):
            raise RequestError(f"request source {key} must be an absolute path")
    if source.get("kind", "file") not in ("file", "directory"):
        raise RequestError("request source kind must be file or directory")
    if "size_bytes" in source:
        rlviz_int(source["size_bytes"], 0, "request source size_bytes")
    modified = source.get("modified_at", "1970-01-01T00:00:00Z")
    if not isinstance(modified, str) or not _RFC3339.match(modified):
        raise RequestError("request source modified_at must be an RFC 3339 date-time")
    if "options" in req and not isinstance(req["options"], dict):
        raise RequestError("request options must be an object")
    limits = req.get("limits", {})
    rlviz_keys(limits, _RLVIZ_LIMIT_KEYS, (), "request limits")
    for key in limits:
        rlviz_int(limits[key], 1, f"request limits {key}")
    try:
        contained(source["root"], source["path"], "request source")
    except MappingError as exc:  # a request RLViz would not send: exit 2
        raise RequestError(str(exc)) from None
    return req


def rlviz_probe(req, probe):
    """The probe answer for a request: bounded, and `supported: false` for a directory."""
    source = req["source"]
    if source.get("kind") == "directory" or os.path.isdir(source["path"]):
        return {
            "supported": False,
            "confidence": 0.0,
            "reason": "source is a directory; this adapter reads files",
        }
    return probe(source["path"], req.get("limits", {}).get("probe_bytes"))


def rlviz_stream(req, map_source, max_bytes, max_line_bytes, out):
    """Map the requested source and write canonical NDJSON (``complete`` last) to ``out``."""
    from .stream import MapState, SourceFile, write_canonical

    source = req["source"]
    if source.get("kind") == "directory":
        raise MappingError("source is a directory; this adapter reads files")
    src = SourceFile(source["path"], source["root"], max_bytes, max_line_bytes)
    return write_canonical(map_source, src, out, MapState(), RLVIZ_OUTPUT_LIMITS)


def rlviz_main(argv, probe, map_source, max_bytes, max_line_bytes):
    """Run one adapter operation (``argv``: the arguments, by default the command line's);
    returns the exit status."""
    if argv is None:
        argv = sys.argv[1:]
    try:
        operation, path = rlviz_parse_argv(argv)
        req = rlviz_read_request(operation, path)
    except RequestError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    try:
        if operation == "probe":
            answer = json.dumps(rlviz_probe(req, probe), ensure_ascii=False, separators=(",", ":"))
            sys.stdout.buffer.write(answer.encode("utf-8") + b"\n")
            sys.stdout.buffer.flush()
        else:
            st = rlviz_stream(req, map_source, max_bytes, max_line_bytes, sys.stdout.buffer)
            warn_stderr(st)
    except BrokenPipeError:
        # the reader stopped listening: leave quietly (no traceback at exit)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:  # every failure is one line on stderr
        sys.stderr.write("error: " + " ".join(one_line(exc).split()) + "\n")
        return 1
    return 0
