"""The semantic checks of a spec, one module per section, as functions over a
:class:`~mapc.spec.checks.context.Context` (see :mod:`mapc.spec.checks.build`)."""
