"""An adapter's ``probe``: what a spec's `source.probe` says, read by `sniff` (imported on the
first probe, so a stream never compiles it)."""

from .mapping_rt import truthy


def source_probe(fmt, container, nbytes, nlines, required, when, confidence, tables, *extra):
    """The ``probe(path, limit=None)`` of an adapter: at most ``nbytes`` (or RLViz's smaller
    ``limit``) and ``nlines`` lines, the ``required`` fields, and ``when(doc, scope)``;
    ``extra``: the required fields as the spec wrote them when that is not the dotted paths,
    then ``(columns, delimiter)`` of a csv container."""
    required_text = tuple(".".join(map(str, p)) for p in required)
    if extra and extra[0]:
        required_text = extra[0]
    csv_format = extra[1] if len(extra) > 1 else None

    def test(doc):
        return truthy(when(doc, {"tables": tables}))

    def probe(path, limit=None):
        from .sniff import probe_source

        limit = nbytes if limit is None else max(1, min(limit, nbytes))
        return probe_source(
            path, container, limit, nlines, required, test if when else None, confidence, fmt,
            required_text, csv_format,
        )

    return probe
