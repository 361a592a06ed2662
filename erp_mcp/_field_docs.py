"""Field descriptions from attribute docstrings, each class's source parsed once.

Pydantic's ``use_attribute_docstrings`` finds a class's source (on Python < 3.13) by walking the
call stack, asking ``inspect.getmodule`` of every frame (a scan of all loaded modules) and parsing
each candidate block twice. Here the class's block is found from the one frame that runs its
source file, and parsed once, for its ``x: int`` + docstring pairs. The descriptions are set on
the class before pydantic collects its fields, so the schemas are the same as with pydantic's
option.
"""

from __future__ import annotations

import ast
import copy
import inspect
import itertools
import linecache
import sys
import textwrap
import tokenize

from pydantic import Field
from pydantic.fields import FieldInfo

_UNSET = object()


def _class_node(cls: type) -> ast.ClassDef | None:
    """The ``class`` statement of ``cls``, parsed alone: the block at the line of the frame that
    is executing it (going out from here, the first frame in the class's own source file, other
    than an ``__init_subclass__``, whose block is that class)."""
    source_file = getattr(sys.modules.get(cls.__module__), "__file__", None)
    frame = sys._getframe(1)
    while frame is not None and source_file is not None:
        code = frame.f_code
        if code.co_filename == source_file and code.co_name != "__init_subclass__":
            statement = _statement_at(source_file, frame.f_lineno)
            if isinstance(statement, ast.ClassDef) and statement.name == cls.__name__:
                return statement
        frame = frame.f_back
    return None


def _statement_at(source_file: str, line: int) -> ast.stmt | None:
    lines = linecache.getlines(source_file)
    try:
        block = textwrap.dedent("".join(inspect.getblock(lines[line - 1 :])))
        return ast.parse(block).body[0]
    except (SyntaxError, IndexError, tokenize.TokenError):
        return None


def _attribute_docs(body: list[ast.stmt]) -> dict[str, str]:
    """``name: T`` (or ``name: T = v``) directly followed by a string, as pydantic reads them;
    an attribute that names its ``description=`` itself keeps it."""
    docs: dict[str, str] = {}
    for node, following in itertools.pairwise(body):
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        if not (
            isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            continue
        if any(isinstance(k, ast.keyword) and k.arg == "description" for k in ast.walk(node)):
            continue
        docs[node.target.id] = inspect.cleandoc(following.value.value)
    return docs


def describe_fields(cls: type) -> None:
    """Give each field of ``cls`` documented in its source the docstring as its description
    (unless the field states one). Call from ``__init_subclass__`` of a pydantic model."""
    annotations = inspect.get_annotations(cls)
    node = _class_node(cls) if annotations else None
    for name, doc in (_attribute_docs(node.body) if node else {}).items():
        if name not in annotations:
            continue
        value = cls.__dict__.get(name, _UNSET)
        if isinstance(value, FieldInfo):
            if value.description is not None:
                continue
            described = copy.copy(value)
            described._attributes_set = {**value._attributes_set, "description": doc}
            described.description = doc
        elif value is _UNSET:
            described = Field(description=doc)
        else:
            described = Field(default=value, description=doc)
        setattr(cls, name, described)
