"""Markdown-aware chunking with the real tokenizer: exact slices, bounded size, full coverage."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.index.chunker import MAX_CHUNK_TOKENS, Chunker


@pytest.fixture(scope="module")
def chunker(embedder):
    return Chunker.for_embedder(embedder)


@pytest.fixture(scope="module")
def true_count():
    """Word pieces of a text with [CLS]/[SEP], never truncated: an independent ruler for chunk sizes."""
    from tokenizers import Tokenizer

    from core.index.embedder import tokenizer_path

    tok = Tokenizer.from_file(str(tokenizer_path()))
    tok.no_truncation()
    tok.no_padding()
    return lambda text: len(tok.encode(text, add_special_tokens=True).ids)


# -- markdown-ish text ---------------------------------------------------------------------------
_word = st.one_of(
    st.sampled_from(["graph", "node", "the", "embedding", "Zürich", "東京", "naïve", "λόγος", "C++", "e.g.",
                     "don't", "x", "42", "3.14", "(aside)", "[link](http://a.example)", "`code`", "**bold**"]),
    st.text(alphabet=st.characters(categories=["L", "N"]), min_size=1, max_size=12),
    st.text(alphabet="abcdefghij", min_size=30, max_size=400),  # long words → word pieces / [UNK]
    st.text(min_size=1, max_size=6).filter(lambda s: not any(c in s for c in "\n\r")),
)
_sentence = st.builds(
    lambda words, end: " ".join(words) + end,
    st.lists(_word, min_size=1, max_size=40),
    st.sampled_from([".", "!", "?", "…", '."', ".)", "", ";", "\n"]),
)
_paragraph = st.lists(_sentence, min_size=1, max_size=30).map(" ".join)
_heading = st.builds(lambda level, title: "#" * level + " " + title,
                     st.integers(1, 6), st.lists(_word, min_size=1, max_size=5).map(" ".join))
_fence = st.builds(lambda body, marker: f"{marker}\n{body}\n{marker}",
                   st.lists(st.one_of(_heading, _sentence), max_size=5).map("\n".join), st.sampled_from(["```", "~~~"]))
_block = st.one_of(_heading, _paragraph, _fence, st.just(""), st.just("   \t"), st.text(max_size=50))
_markdown = st.builds(
    lambda blocks, seps: "".join(b + s for b, s in zip(blocks, seps)),
    st.lists(_block, max_size=12),
    st.lists(st.sampled_from(["\n", "\n\n", "\n\n\n", "\r\n\r\n", " \n \n"]), min_size=12, max_size=12),
)


def _check_chunks(source: str, chunks, embedder, true_count) -> None:
    covered = bytearray(len(source))
    previous = None
    for i, c in enumerate(chunks):
        assert c.idx == i
        assert 0 <= c.start_char < c.end_char <= len(source)
        assert source[c.start_char:c.end_char] == c.text
        assert c.text.strip(), "a chunk of only whitespace"
        assert true_count(c.text) <= embedder.max_tokens, (true_count(c.text), c.text[:80])
        if previous is not None:
            assert c.start_char >= previous.start_char and c.end_char > previous.end_char
        previous = c
        covered[c.start_char:c.end_char] = b"\x01" * (c.end_char - c.start_char)
    lost = [(i, ch) for i, ch in enumerate(source) if not covered[i] and not ch.isspace()]
    assert not lost, f"characters in no chunk: {lost[:10]}"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(source=_markdown)
def test_chunks_are_exact_bounded_ordered_and_cover_the_text(chunker, embedder, true_count, source):
    chunks = chunker.split(source)
    _check_chunks(source, chunks, embedder, true_count)
    if source.strip():
        assert chunks


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(source=st.text(max_size=3000))
def test_arbitrary_text_chunks_exactly(chunker, embedder, true_count, source):
    _check_chunks(source, chunker.split(source), embedder, true_count)


def test_whitespace_only_text_gives_no_chunks(chunker):
    assert chunker.split("") == []
    assert chunker.split("  \n\n\t \r\n ") == []


def test_long_prose_chunks_stay_inside_the_budget(chunker, true_count):
    source = " ".join(f"Sentence number {i} talks about graphs, vectors and the nodes between them." for i in range(300))
    chunks = chunker.split(source)
    assert len(chunks) > 5
    for c in chunks:
        assert chunker.count(c.text) <= MAX_CHUNK_TOKENS
        assert true_count(c.text) - 2 <= MAX_CHUNK_TOKENS


def test_heading_paths_on_a_concrete_document(chunker):
    source = (
        "Intro before any heading.\n"
        "\n"
        "# Animals\n"
        "Animals in general.\n"
        "\n"
        "## Birds\n"
        "Birds fly.\n"
        "\n"
        "```python\n"
        "# not a heading, a comment in code\n"
        "x = 1\n"
        "```\n"
        "\n"
        "### Owls ###\n"
        "Owls hunt at night.\n"
        "\n"
        "## Fish\n"
        "Fish swim.\n"
        "\n"
        "~~~\n"
        "## also not a heading\n"
        "~~~\n"
        "# Plants\n"
        "Plants grow.\n"
    )
    chunks = chunker.split(source)
    by_text = {}
    for c in chunks:
        assert source[c.start_char:c.end_char] == c.text
        for needle in ("Intro before", "Animals in general", "Birds fly", "not a heading, a comment", "Owls hunt",
                       "Fish swim", "also not a heading", "Plants grow"):
            if needle in c.text:
                by_text[needle] = c.heading_path
    assert by_text == {
        "Intro before": (),
        "Animals in general": ("Animals",),
        "Birds fly": ("Animals", "Birds"),
        "not a heading, a comment": ("Animals", "Birds"),
        "Owls hunt": ("Animals", "Birds", "Owls"),
        "Fish swim": ("Animals", "Fish"),
        "also not a heading": ("Animals", "Fish"),
        "Plants grow": ("Plants",),
    }
    # every heading path element is a real heading of the document, never a code comment
    assert not any("not a heading" in h for c in chunks for h in c.heading_path)


def test_a_section_starts_a_new_chunk(chunker):
    source = "# One\nFirst part.\n\n# Two\nSecond part.\n"
    chunks = chunker.split(source)
    assert [c.text for c in chunks] == ["# One\nFirst part.", "# Two\nSecond part."]
    assert [c.heading_path for c in chunks] == [("One",), ("Two",)]
    assert chunks[1].start_char == source.index("# Two")


def test_long_paragraph_chunks_overlap(chunker):
    sentences = [f"Fact {i}: the heron number {i} waits by the river at dawn." for i in range(120)]
    source = " ".join(sentences)
    chunks = chunker.split(source)
    assert len(chunks) >= 3
    for a, b in zip(chunks, chunks[1:]):
        assert b.start_char < a.end_char, "consecutive chunks of one paragraph should share text"
        shared = source[b.start_char:a.end_char]
        assert shared.strip() and shared in a.text and shared in b.text
    # each sentence appears whole in at least one chunk (a passage cut at a boundary is still found)
    for s in sentences:
        assert any(s in c.text for c in chunks), s


def test_one_huge_word_run_is_split_at_token_boundaries(chunker, true_count):
    source = " ".join(["pneumonoultramicroscopicsilicovolcanoconiosis"] * 200)
    chunks = chunker.split(source)
    assert len(chunks) > 1
    for c in chunks:
        assert true_count(c.text) - 2 <= MAX_CHUNK_TOKENS + 8
        assert not c.text.startswith("##")
    assert chunks[0].start_char == 0 and chunks[-1].end_char == len(source)


def test_content_hash_depends_only_on_text(chunker):
    a = chunker.split("# A\nSame words here.")
    b = chunker.split("Preamble.\n\n# A\nSame words here.")
    assert a[-1].text == b[-1].text and a[-1].content_hash == b[-1].content_hash
    assert chunker.split("# A\nOther words here.")[-1].content_hash != a[-1].content_hash


# -- regressions found by the property tests above ---------------------------------------------
def _uncovered(source: str, chunks) -> list[tuple[int, str]]:
    covered = set()
    for c in chunks:
        covered.update(range(c.start_char, c.end_char))
    return [(i, ch) for i, ch in enumerate(source) if i not in covered and not ch.isspace()]


def test_closing_quotes_after_a_sentence_are_not_dropped(chunker):
    # Long quoted sentences (each over the overlap budget) so some chunk boundary falls right after `."`
    sentences = [f'He said "the survey of site {i} found {", ".join(f"shard {i}-{k}" for k in range(12))}."'
                 for i in range(12)]
    source = " ".join(sentences)
    chunks = chunker.split(source)
    assert len(chunks) > 1
    assert _uncovered(source, chunks) == []


def test_no_chunk_is_a_repeat_inside_the_previous_one(chunker):
    # Short sentences, then one sentence almost as big as a whole chunk: the overlap carried from the
    # short ones cannot fit beside it, and must not become a chunk of its own.
    short = " ".join(f"Short line {i} here." for i in range(40))
    big = " ".join(["apple"] * (chunker.max_tokens - 20)) + "."  # one word piece per word
    assert chunker.max_tokens - chunker.overlap_tokens < chunker.count(big) <= chunker.max_tokens
    source = f"{short} {big}"
    chunks = chunker.split(source)
    for a, b in zip(chunks, chunks[1:]):
        assert b.end_char > a.end_char, (a.text[-60:], b.text[-60:])


def test_a_character_the_tokenizer_ignores_is_still_kept(chunker):
    # U+FFFD (what a bad decode leaves behind) is dropped by the tokenizer; a long run of text that
    # has to be cut at token boundaries must still keep it in its first chunk.
    source = "\ufffd" + " ".join(f"token{k}" for k in range(400))
    chunks = chunker.split(source)
    assert len(chunks) > 1
    assert chunks[0].start_char == 0
    assert _uncovered(source, chunks) == []
