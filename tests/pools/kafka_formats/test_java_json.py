"""Jackson tree reading and Java rendering, as Kafka's tools rely on them."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pools.kafka_formats.java_json import MISSING, JacksonParseError, encode_compact, read_tree, render_node


@pytest.mark.parametrize(
    ("value", "text"),
    [(1.0, "1.0"), (1e20, "1.0E20"), (1e-4, "1.0E-4"), (0.001, "0.001"), (1234567.0, "1234567.0"),
     (12345678.0, "1.2345678E7"), (-0.0, "-0.0"), (123.5, "123.5"), (float("inf"), '"Infinity"')],
)
def test_doubles_render_as_java_double_to_string(value: float, text: str) -> None:
    assert render_node(value) == text


def test_strings_use_jackson_escapes() -> None:
    assert encode_compact("a\"\\\n\x01é/") == '"a\\"\\\\\\n\\u0001é/"'


def test_blank_input_is_missing_and_trailing_text_ignored() -> None:
    assert read_tree("  \n") is MISSING and render_node(MISSING) == ""
    assert read_tree('{"a": [1, 2]} {"b"') == {"a": [1, 2]}


@pytest.mark.parametrize(
    ("text", "cls", "start"),
    [
        ("{", "JsonEOFException", "Unexpected end-of-input: expected close marker for Object"),
        ('["a', "JsonEOFException", "Unexpected end-of-input: was expecting closing quote for a string value"),
        ("[1,]", "JsonParseException", "Unexpected character (']' (code 93)): expected a value"),
        ('{"a":1,}', "JsonParseException", "Unexpected character ('}' (code 125)): was expecting double-quote to start field name"),
        ('{"a" 1}', "JsonParseException", "Unexpected character ('1' (code 49)): was expecting a colon"),
        ("[01]", "JsonParseException", "Invalid numeric value: Leading zeroes not allowed"),
        ("[NaN]", "JsonParseException", "Non-standard token 'NaN'"),
        ("[tru]", "JsonParseException", "Unrecognized token 'tru'"),
        ("5x", "JsonParseException", "Unexpected character ('x' (code 120)): Expected space separating root-level values"),
    ],
)
def test_syntax_errors(text: str, cls: str, start: str) -> None:
    with pytest.raises(JacksonParseError) as info:
        read_tree(text)
    assert info.value.java_class.endswith(cls)
    assert info.value.message.startswith(start)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3),
    max_leaves=10,
)


@given(json_values)
def test_reads_what_a_standard_encoder_writes(value: object) -> None:
    assert read_tree(json.dumps(value)) == value
    assert read_tree(encode_compact(value)) == value


@pytest.mark.parametrize(
    ("text", "start"),
    [
        ("[1,}", "Unexpected character ('}' (code 125)): expected a value"),
        ("[}", "Unexpected close marker '}': expected ']' (for Array starting at"),
        ('{"a":]', "Unexpected character (']' (code 93)): expected a valid value"),
        ("]", "Unexpected close marker ']': expected '}' (for root starting at"),
        ("[+1]", "Unexpected character ('+' (code 43)) in numeric value: JSON spec does not allow numbers to have plus signs"),
        ("[abc]", "Unrecognized token 'abc': was expecting ('true', 'false' or 'null')"),
        ('{"a', "Unexpected end-of-input in field name"),
    ],
)
def test_value_position_rules_follow_jacksons_next_token(text: str, start: str) -> None:
    with pytest.raises(JacksonParseError) as info:
        read_tree(text)
    assert info.value.message.startswith(start)
