"""Static trajectory viewer: ``ledgerbench view RUN [RUN...] --out DIR``.

Library entry point: :func:`build_viewer`; the command: ``ledgerbench view --help``.
"""

from ledgerbench.viewer._build import ViewerError, build_viewer, load_run, markdown_script
from ledgerbench.viewer._cli import main

__all__ = ["ViewerError", "build_viewer", "load_run", "main", "markdown_script"]
