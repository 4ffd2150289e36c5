"""Tool declarations from Python: functions, pydantic models, dicts, JSON.

A declaration is {"name", "description", "parameters": JSON Schema} (SPEC §9
lists the keywords the grammar enforces). A function's schema comes from its
signature (types, defaults) and its Google-style docstring (summary, `Args:`).
"""
import dataclasses
import datetime
import enum
import inspect
import json
import re
import types
import typing

_MISSING = object()


class Field:
    """Constraints and a description for one parameter, compiled into the grammar.

    As a default value (`count: int = Field("how many", ge=1)`) or inside
    `Annotated[int, Field(...)]`. Pass `default=` to make the parameter optional.
    """

    _KEYWORDS = {  # argument -> JSON Schema keyword
        "enum": "enum", "const": "const", "ge": "minimum", "le": "maximum", "gt": "exclusiveMinimum",
        "lt": "exclusiveMaximum", "multiple_of": "multipleOf", "min_length": "minLength", "max_length": "maxLength",
        "pattern": "pattern", "format": "format", "min_items": "minItems", "max_items": "maxItems",
        "unique_items": "uniqueItems",
    }

    def __init__(self, description=None, enum=None, const=_MISSING, ge=None, le=None, gt=None, lt=None,
                 multiple_of=None, min_length=None, max_length=None, pattern=None, format=None, min_items=None,
                 max_items=None, unique_items=None, *, default=_MISSING):
        if description is not None and not isinstance(description, str):
            raise TypeError(f"Field: description must be a str, not {type(description).__name__}")
        if enum is not None and (not isinstance(enum, (list, tuple)) or not enum):
            raise ValueError("Field: enum must be a non-empty list of values")
        for name, v in (("ge", ge), ("le", le), ("gt", gt), ("lt", lt), ("multiple_of", multiple_of)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                raise TypeError(f"Field: {name} must be a number, not {v!r}")
        for name, v in (("min_length", min_length), ("max_length", max_length), ("min_items", min_items),
                        ("max_items", max_items)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
                raise ValueError(f"Field: {name} must be a non-negative int, not {v!r}")
        if pattern is not None and not isinstance(pattern, str):
            raise TypeError("Field: pattern must be a str")
        self.description = description
        self.default = default
        self._values = {"enum": list(enum) if enum is not None else None, "const": const, "ge": ge, "le": le,
                        "gt": gt, "lt": lt, "multiple_of": multiple_of, "min_length": min_length,
                        "max_length": max_length, "pattern": pattern, "format": format, "min_items": min_items,
                        "max_items": max_items, "unique_items": unique_items}

    def keywords(self):
        """The JSON Schema keywords this field adds."""
        out = {}
        if self.description:
            out["description"] = self.description
        for arg, keyword in self._KEYWORDS.items():
            v = self._values[arg]
            if v is not None and v is not _MISSING:
                out[keyword] = v
        return out

    def __repr__(self):
        return f"Field({self.keywords()!r})"


# ---- docstrings

_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Params|Returns?|Yields?|Raises|Examples?|Notes?|"
                      r"Attributes|See Also|Todo|Warnings?)\s*:\s*$")
_ARG = re.compile(r"^\s*\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_SPHINX_PARAM = re.compile(r"^\s*:param\s+(?:[\w\[\], ]+\s+)?(\w+)\s*:\s*(.*)$")


def parse_docstring(doc):
    """(summary, {argument: description}) from a Google-style (or Sphinx
    `:param x:`) docstring."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    summary = []
    i = 0
    while i < len(lines) and lines[i].strip() and not _SECTION.match(lines[i]) \
            and not _SPHINX_PARAM.match(lines[i]):
        summary.append(lines[i].strip())
        i += 1
    args = {}
    section, current, indent = None, None, None
    for line in lines[i:]:
        header = _SECTION.match(line)
        if header:
            section = header.group(1).lower()
            current, indent = None, None
            continue
        sphinx = _SPHINX_PARAM.match(line)
        if sphinx:
            current = sphinx.group(1)
            args[current] = sphinx.group(2).strip()
            section = "sphinx"
            continue
        if not line.strip():
            continue
        if section in ("args", "arguments", "parameters", "params"):
            lead = len(line) - len(line.lstrip())
            m = _ARG.match(line)
            if m and (indent is None or lead <= indent):
                indent = lead
                current = m.group(1)
                args[current] = m.group(2).strip()
            elif current is not None:  # a continuation line
                args[current] = (args[current] + " " + line.strip()).strip()
        elif section == "sphinx" and current is not None and line.startswith((" ", "\t")):
            args[current] = (args[current] + " " + line.strip()).strip()
    return " ".join(summary), args


# ---- types

def _json_type(values):
    """The JSON type all `values` share, or None."""
    kinds = set()
    for v in values:
        if isinstance(v, bool):
            kinds.add("boolean")
        elif isinstance(v, int):
            kinds.add("integer")
        elif isinstance(v, float):
            kinds.add("number")
        elif isinstance(v, str):
            kinds.add("string")
        elif v is None:
            kinds.add("null")
        else:
            return None
    if kinds == {"integer", "number"}:
        return "number"
    return kinds.pop() if len(kinds) == 1 else None


def _enum_schema(values):
    out = {}
    t = _json_type(values)
    if t:
        out["type"] = t
    out["enum"] = list(values)
    return out


def is_pydantic_model(x):
    return isinstance(x, type) and any(c.__name__ == "BaseModel" and c.__module__.startswith("pydantic")
                                       for c in x.__mro__[1:])


def type_schema(tp, where):
    """(schema, optional) for a Python annotation; `where` names it in errors."""
    if tp is inspect.Parameter.empty or tp is typing.Any:
        return {"type": "string"}, False
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        schema, optional = type_schema(args[0], where)
        for meta in args[1:]:
            if isinstance(meta, Field):
                schema.update(meta.keywords())
            elif isinstance(meta, str):
                schema["description"] = meta
        return schema, optional
    if origin is typing.Union or (hasattr(types, "UnionType") and isinstance(tp, types.UnionType)):
        members = [a for a in args if a is not type(None)]
        if len(members) == 1:
            schema, _ = type_schema(members[0], where)
            return schema, len(members) < len(args)
        raise TypeError(f"{where}: a union of several types ({tp}) is not supported; declare one type")
    if origin is typing.Literal:
        return _enum_schema(args), False
    if tp is bool:
        return {"type": "boolean"}, False
    if tp is int:
        return {"type": "integer"}, False
    if tp is float:
        return {"type": "number"}, False
    if tp is str:
        return {"type": "string"}, False
    if tp is datetime.datetime:
        return {"type": "string", "format": "date-time"}, False
    if tp is datetime.date:
        return {"type": "string", "format": "date"}, False
    if tp is datetime.time:
        return {"type": "string", "format": "time"}, False
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _enum_schema([m.value for m in tp]), False
    if is_pydantic_model(tp):
        return pydantic_schema(tp), False
    if dataclasses.is_dataclass(tp):
        return _callable_parameters(tp, where), False
    list_like = (list, tuple, set, frozenset, typing.List, typing.Sequence, typing.Set)
    if tp in list_like or origin in (list, tuple, set, frozenset) or \
            (origin is not None and getattr(origin, "__name__", "") in ("Sequence", "Iterable", "Collection")):
        schema = {"type": "array"}
        members = [a for a in args if a is not Ellipsis]
        if members and all(a == members[0] for a in members):  # tuple[int, str] declares no one item type
            schema["items"], _ = type_schema(members[0], where + "[]")
        if tp in (set, frozenset) or origin in (set, frozenset):
            schema["uniqueItems"] = True
        return schema, False
    if tp in (dict, typing.Dict) or origin is dict or getattr(origin, "__name__", "") == "Mapping":
        return {"type": "object"}, False
    raise TypeError(f"{where}: type {getattr(tp, '__name__', tp)!s} has no JSON Schema here "
                    "(use int, float, str, bool, list[T], dict, Literal, an Enum, Optional, a pydantic model)")


# ---- functions

def _callable_parameters(fn, where):
    """The parameters object of a function's (or a dataclass's) signature."""
    sig = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception:  # an annotation that does not resolve: read them as written
        hints = {k: p.annotation for k, p in sig.parameters.items()}
    _, arg_docs = parse_docstring(inspect.getdoc(fn) if not dataclasses.is_dataclass(fn) else None)
    properties, required = {}, []
    for name, p in sig.parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise TypeError(f"{where}: *{name} cannot be declared to the model; name each parameter")
        if name in ("self", "cls") and p.annotation is p.empty:
            continue
        schema, optional = type_schema(hints.get(name, p.annotation), f"{where}.{name}")
        default = p.default
        if isinstance(default, Field):
            schema.update(default.keywords())
            default = default.default
        if "description" not in schema and arg_docs.get(name):
            schema = {"description": arg_docs[name], **schema}
        properties[name] = schema
        has_default = default is not p.empty and default is not _MISSING
        if not optional and not has_default:
            required.append(name)
    out = {"type": "object", "properties": properties}
    if required:
        out["required"] = required
    return out


def function_schema(fn, name=None, description=None):
    """A tool declaration for a Python function."""
    tool_name = name or fn.__name__
    summary, _ = parse_docstring(inspect.getdoc(fn))
    return {"name": tool_name, "description": description if description is not None else summary,
            "parameters": _callable_parameters(fn, tool_name)}


def tool(fn=None, *, name=None, description=None):
    """Declares a function as a tool: `@needle.tool` or `@needle.tool(name=..., description=...)`.

    The function is returned unchanged (still callable) with its declaration
    in `fn.__needle_tool__`. Needle(tools=[fn]) then calls it in run()."""
    def wrap(f):
        f.__needle_tool__ = function_schema(f, name, description)
        return f
    return wrap(fn) if fn is not None else wrap


# ---- pydantic models

def _resolve(node, defs, seen):
    """`node` with $ref resolved against `defs`, Optional unions collapsed and
    titles dropped, so that the grammar sees only keywords it enforces."""
    if isinstance(node, list):
        return [_resolve(n, defs, seen) for n in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        ref = node["$ref"].rsplit("/", 1)[-1]
        if ref in seen:
            raise TypeError(f"the model {ref} refers to itself; recursive schemas cannot be declared")
        if ref not in defs:
            raise TypeError(f"unresolved $ref {node['$ref']}")
        target = _resolve(defs[ref], defs, seen | {ref})
        rest = {k: v for k, v in node.items() if k != "$ref"}
        return {**target, **_resolve(rest, defs, seen)}
    for key in ("allOf", "anyOf", "oneOf"):
        if key in node:
            members = [m for m in node[key] if m != {"type": "null"}]
            if len(members) == 1:
                rest = {k: v for k, v in node.items() if k != key}
                return {**_resolve(members[0], defs, seen), **_resolve(rest, defs, seen)}
    out = {}
    for k, v in node.items():
        if k in ("title", "$defs", "definitions"):
            continue
        if k == "properties":
            out[k] = {name: _resolve(sub, defs, seen) for name, sub in v.items()}
        else:
            out[k] = _resolve(v, defs, seen)
    return out


def pydantic_schema(cls):
    """A pydantic model's JSON Schema (pydantic 1 or 2), self-contained."""
    raw = cls.model_json_schema() if hasattr(cls, "model_json_schema") else cls.schema()
    defs = {**raw.get("definitions", {}), **raw.get("$defs", {})}
    return _resolve(raw, defs, frozenset())


def pydantic_tool(cls):
    schema = pydantic_schema(cls)
    description = schema.pop("description", "") or ""
    return {"name": cls.__name__, "description": description, "parameters": schema}


def pydantic_instance(cls, data):
    return cls.model_validate(data) if hasattr(cls, "model_validate") else cls.parse_obj(data)


# ---- tools as the user gives them

def _declaration(t):
    """(declaration, python callable or None) for one tool as given."""
    if isinstance(t, dict):
        if t.get("type") == "function" and isinstance(t.get("function"), dict):  # OpenAI's wrapping
            t = t["function"]
        if not isinstance(t.get("name"), str):
            raise ValueError(f"a tool dict needs a \"name\" (and \"parameters\"): {json.dumps(t)[:80]}")
        return t, None
    if is_pydantic_model(t):
        return pydantic_tool(t), None
    if callable(t):
        decl = getattr(t, "__needle_tool__", None) or function_schema(t)
        return decl, t
    raise TypeError(f"a tool must be a function, a pydantic model, a dict or a JSON string, not {type(t).__name__}")


def normalize_tools(tools):
    """(declarations, {name: callable}) from None, a JSON string, a dict, or a
    list of functions, pydantic models and dicts."""
    if tools is None:
        return [], {}
    if isinstance(tools, (str, bytes)):
        try:
            tools = json.loads(tools)
        except json.JSONDecodeError as e:
            raise ValueError(f"tools: not valid JSON: {e}") from None
        if isinstance(tools, dict) and isinstance(tools.get("tools"), list):
            tools = tools["tools"]
    if isinstance(tools, dict) or callable(tools):
        tools = [tools]
    if not isinstance(tools, (list, tuple)):
        raise TypeError(f"tools must be a list, not {type(tools).__name__}")
    declarations, functions = [], {}
    for t in tools:
        decl, fn = _declaration(t)
        if any(d["name"] == decl["name"] for d in declarations):
            raise ValueError(f"two tools are named {decl['name']!r}")
        declarations.append(decl)
        if fn is not None:
            functions[decl["name"]] = fn
    return declarations, functions


def call_arguments(fn, arguments):
    """The call's JSON arguments as the function's types: Enum members and
    pydantic instances where the signature asks for them."""
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception:
        return dict(arguments)
    out = {}
    for name, value in arguments.items():
        tp = hints.get(name)
        if typing.get_origin(tp) is typing.Annotated:
            tp = typing.get_args(tp)[0]
        if typing.get_origin(tp) is typing.Union or (hasattr(types, "UnionType") and isinstance(tp, types.UnionType)):
            members = [a for a in typing.get_args(tp) if a is not type(None)]
            tp = members[0] if len(members) == 1 else None
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            value = tp(value)
        elif is_pydantic_model(tp) and isinstance(value, dict):
            value = pydantic_instance(tp, value)
        out[name] = value
    return out
