"""Tool declarations from Python (no engine needed): signatures, docstrings,
Field, pydantic models, the shapes tools are given in."""
import enum
import os
import sys
from typing import Annotated, Dict, List, Literal, Optional

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import needle  # noqa: E402
from needle._schema import normalize_tools  # noqa: E402


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


def test_types_defaults_and_docstring():
    @needle.tool
    def plan_trip(city: str, days: int, budget: float, pets: bool, stops: list[str], extra: dict,
                  mode: Literal["car", "train"], color: Color, note: Optional[str], seats: int | None = None,
                  scores: List[int] = (), level: int = 3):
        """Plan a trip to a city.

        More words that are not the summary.

        Args:
            city: where to go
            days (int): how many days,
                counted from tomorrow
            budget: in euros
        Returns:
            a plan
        """

    decl = plan_trip.__needle_tool__
    assert decl["name"] == "plan_trip"
    assert decl["description"] == "Plan a trip to a city."
    p = decl["parameters"]["properties"]
    assert p["city"] == {"description": "where to go", "type": "string"}
    assert p["days"] == {"description": "how many days, counted from tomorrow", "type": "integer"}
    assert p["budget"]["type"] == "number" and p["pets"] == {"type": "boolean"}
    assert p["stops"] == {"type": "array", "items": {"type": "string"}}
    assert p["extra"] == {"type": "object"}
    assert p["mode"] == {"type": "string", "enum": ["car", "train"]}
    assert p["color"] == {"type": "string", "enum": ["red", "green"]}
    assert p["note"] == {"type": "string"} and p["seats"] == {"type": "integer"}
    assert p["scores"] == {"type": "array", "items": {"type": "integer"}}
    # Required: no default and not Optional.
    assert decl["parameters"]["required"] == ["city", "days", "budget", "pets", "stops", "extra", "mode", "color"]
    assert plan_trip("x", 1, 1.0, True, [], {}, "car", Color.RED, None) is None  # still a plain function


def test_field_keywords_and_validation():
    @needle.tool(name="transfer", description="Send money")
    def send(amount: Annotated[int, needle.Field("in cents", ge=1, le=10000, multiple_of=5)],
             memo: str = needle.Field("a note", min_length=1, max_length=40, pattern="^[a-z ]+$", default=""),
             tags: list[str] = needle.Field(min_items=1, max_items=3, unique_items=True),
             when: str = needle.Field(format="date"), kind: str = needle.Field(enum=["a", "b"], const="a"),
             ratio: float = needle.Field(gt=0, lt=1)):
        pass

    decl = send.__needle_tool__
    assert decl["name"] == "transfer" and decl["description"] == "Send money"
    p = decl["parameters"]["properties"]
    assert p["amount"] == {"type": "integer", "description": "in cents", "minimum": 1, "maximum": 10000,
                           "multipleOf": 5}
    assert p["memo"] == {"type": "string", "description": "a note", "minLength": 1, "maxLength": 40,
                         "pattern": "^[a-z ]+$"}
    assert p["tags"] == {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3,
                         "uniqueItems": True}
    assert p["when"]["format"] == "date" and p["kind"]["enum"] == ["a", "b"] and p["kind"]["const"] == "a"
    assert p["ratio"]["exclusiveMinimum"] == 0 and p["ratio"]["exclusiveMaximum"] == 1
    assert decl["parameters"]["required"] == ["amount", "tags", "when", "kind", "ratio"]  # memo has a default

    with pytest.raises(ValueError, match="enum"):
        needle.Field(enum=[])
    with pytest.raises(TypeError, match="ge"):
        needle.Field(ge="1")
    with pytest.raises(ValueError, match="min_length"):
        needle.Field(min_length=-1)


def test_unsupported_signatures_are_named():
    def f(*args):
        pass

    with pytest.raises(TypeError, match=r"\*args"):
        needle.tool(f)

    def g(x: complex):
        pass

    with pytest.raises(TypeError, match=r"g\.x: type complex"):
        needle.tool(g)

    def h(x: int | str):
        pass

    with pytest.raises(TypeError, match="union"):
        needle.tool(h)


def test_sphinx_docstrings():
    summary, args = needle.parse_docstring("Turn on a light.\n\n:param room: which room\n:param int level: 0-100")
    assert summary == "Turn on a light." and args == {"room": "which room", "level": "0-100"}


def test_pydantic_models_resolve_refs_and_optional():
    pydantic = pytest.importorskip("pydantic")

    class Address(pydantic.BaseModel):
        street: str
        city: str

    class Contact(pydantic.BaseModel):
        """A contact card."""
        name: str
        email: Optional[str] = None
        kind: Color = Color.RED
        address: Address
        others: List[Address] = []

    decl, fns = normalize_tools([Contact])
    assert fns == {}
    d = decl[0]
    assert d["name"] == "Contact" and d["description"] == "A contact card."
    props = d["parameters"]["properties"]
    assert props["address"] == {"type": "object", "properties": {"street": {"type": "string"},
                                                                "city": {"type": "string"}},
                                "required": ["street", "city"]}
    assert props["others"]["items"]["properties"]["city"] == {"type": "string"}
    assert props["email"]["type"] == "string" and "enum" in props["kind"]
    assert sorted(d["parameters"]["required"]) == ["address", "name"]
    text = str(d)
    assert "$ref" not in text and "definitions" not in text and "title" not in text


def test_tool_shapes():
    one = {"name": "a", "description": "A", "parameters": {"type": "object", "properties": {}}}
    assert normalize_tools(None) == ([], {})
    assert normalize_tools('[{"name": "a", "parameters": {"type": "object"}}]')[0][0]["name"] == "a"
    assert normalize_tools('{"tools": [{"name": "a", "parameters": {}}]}')[0][0]["name"] == "a"
    assert normalize_tools([{"type": "function", "function": one}])[0] == [one]  # OpenAI's wrapping
    assert normalize_tools(one)[0] == [one]

    def b(x: int):
        """B."""

    decl, fns = normalize_tools([one, b])
    assert [d["name"] for d in decl] == ["a", "b"] and fns == {"b": b}
    with pytest.raises(ValueError, match="two tools"):
        normalize_tools([one, one])
    with pytest.raises(ValueError, match="not valid JSON"):
        normalize_tools("[{")
    with pytest.raises(ValueError, match="name"):
        normalize_tools([{"parameters": {}}])
    with pytest.raises(TypeError, match="a tool must be"):
        normalize_tools([3])


def test_version_matches_the_engine_project():
    cmake = open(os.path.join(os.path.dirname(__file__), "..", "..", "CMakeLists.txt")).read()
    assert f"project(needle VERSION {needle.__version__} " in cmake
