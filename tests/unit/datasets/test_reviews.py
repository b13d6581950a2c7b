"""Review corpus: reader (encodings, formats), statistics (Table 10.2), tokeniser,
vocabulary, windows, PPMI-SVD embedding, GloVe reader and the TF-IDF client graph."""

import math

import numpy as np
import pytest

from networkedfl.datasets import (
    EOS,
    UNK,
    build_vocabulary,
    cooccurrence_matrix,
    encode_documents,
    load_glove,
    ppmi,
    ppmi_svd_embedding,
    ptb_tokenize,
    tfidf_vectors,
    tokenize,
    whitespace_tokens,
    windows,
)
from networkedfl.datasets.reviews import (
    DOMAINS,
    PUBLISHED_TABLE_10_2,
    SPLITS,
    decode_review_line,
    domain_statistics,
    read_domain,
    read_review_file,
    review_files,
)
from networkedfl.experiments.gfl.claims import review_stats_claims
from networkedfl.experiments.gfl.reviews import run_review_stats
from networkedfl.experiments.gfl.reviews_nlp import knn_similarity_graph
from networkedfl.io import vendored_dataset


@pytest.fixture(scope="module")
def corpus(repo):
    return vendored_dataset(repo, "reviews")


# ------------------------------------------------------------------------------ reader


def test_reader_counts_for_a_domain(corpus):
    books = read_domain(corpus, "books", SPLITS)
    assert [books[s].n_documents for s in SPLITS] == [1600, 400, 2000]
    assert books["train"].texts[0].startswith("i am an avid reader of books of biblical prophecy")
    assert int(books["train"].labels.sum() + books["test"].labels.sum()) == 1000
    assert set(np.unique(books["test"].labels)) == {0, 1}
    # the unlabelled file: raw text, no label, no tab
    assert books["unlabel"].labels is None and not books["unlabel"].labelled
    assert books["unlabel"].texts[0].startswith("This all-Spanish handbook for parents")
    assert all("\t" not in t for t in books["unlabel"].texts)
    stats, vocabulary = domain_statistics([books["train"], books["test"]])
    assert stats.documents == 2000 and (stats.train_documents, stats.test_documents) == (1600, 400)
    assert stats.avg_length == pytest.approx(180.812)  # the corpus README's whitespace count
    assert stats.unique_words == len(vocabulary) == 23989
    # software has only 475 unlabelled reviews (corpus README)
    assert read_review_file(corpus / "software.task.unlabel").n_documents == 475


def test_every_domain_matches_the_published_document_count(corpus):
    for domain in DOMAINS:
        files = read_domain(corpus, domain)
        stats, _ = domain_statistics(list(files.values()))
        assert stats.documents == PUBLISHED_TABLE_10_2[domain].sentences, domain
        assert stats.test_documents == 400


def test_windows_1252_and_broken_utf8_lines_are_decoded(corpus):
    assert decode_review_line("café".encode()) == ("café", False)
    # a Windows-1252 byte inside otherwise valid UTF-8 keeps the UTF-8 part intact
    assert decode_review_line(b"caf\xc3\xa9 \x96 na\xefve") == ("café – naïve", True)
    mr = read_review_file(corpus / "MR.task.test")
    with pytest.raises(UnicodeDecodeError):
        (corpus / "MR.task.test").read_bytes().decode("utf-8")
    assert len(mr.fallback_lines) == 6
    joined = "\n".join(mr.texts)
    assert "pokémon 4ever" in joined and "cliché about gays" in joined
    assert "\x96" not in joined and " – " in joined            # en dash, not a C1 control
    dvd = read_review_file(corpus / "dvd.task.train")
    assert len(dvd.fallback_lines) == 1
    assert any("protegé" in t for t in dvd.texts)             # valid UTF-8 lines untouched


@pytest.mark.parametrize("name", ["MR.task.train", "MR.task.unlabel", "dvd.task.train"])
def test_whitespace_tokens_equal_the_raw_bytes_split(corpus, name):
    f = read_review_file(corpus / name)
    raw = (corpus / name).read_bytes().split(b"\n")[: f.n_documents]
    bodies = [r.partition(b"\t")[2] if f.labelled else r for r in raw]
    assert [len(whitespace_tokens(t)) for t in f.texts] == [len(b.split()) for b in bodies]


def test_reader_rejects_malformed_files(tmp_path):
    bad = tmp_path / "toys.task.train"
    bad.write_bytes(b"1\tgood line\nno tab here\n")
    with pytest.raises(ValueError, match="line 2"):
        read_review_file(bad)
    bad.write_bytes(b"2\tlabel out of range\n")
    with pytest.raises(ValueError, match="line 1"):
        read_review_file(bad)
    with pytest.raises(ValueError, match="not a corpus file name"):
        read_review_file(tmp_path / "toys.train")
    with pytest.raises(FileNotFoundError, match="download_reviews"):
        read_review_file(tmp_path / "toys.task.test")
    unlabelled = tmp_path / "toys.task.unlabel"
    unlabelled.write_bytes(b"Raw text, no label.\n1\tstays text\n")
    f = read_review_file(unlabelled)
    assert f.texts == ("Raw text, no label.", "1\tstays text") and f.labels is None
    with pytest.raises(ValueError, match="unknown review domains"):
        review_files(["toys"])


# ------------------------------------------------------------------------------ Table 10.2


def test_table_10_2_job_and_claims(corpus):
    files = [str(corpus / name) for name in review_files(DOMAINS)]
    table = run_review_stats({"repetitions": 1, "unlabelled": False}, "all", 0, 1,
                             inputs={"corpus": files}, experiment_id="t")
    claims = review_stats_claims(table, {})
    assert len(claims) == 3 and all(c.passed for c in claims), claims
    assert not any("verbatim" in c.claim for c in claims)  # no constant compared with itself (issue 40)
    # the claims read the table: one changed count or published length breaks them
    broken = table.copy()
    hit = (broken["domain"] == "baby") & (broken["source"] == "recomputed") & (broken["metric"] == "documents")
    broken.loc[hit, "value"] = 1899
    hit = (broken["domain"] == "MR") & (broken["source"] == "recomputed") & (broken["metric"] == "avg_length")
    broken.loc[hit, "value"] = 1000
    verdict = {c.claim: c.passed for c in review_stats_claims(broken, {})}
    assert not verdict["recomputed document counts equal the published ones in every domain"]
    assert not verdict["recomputed average length within 25 % of the published one in every domain"]
    assert verdict["16 rows"]
    fewer = table[table["domain"] != "imdb"]
    assert not review_stats_claims(fewer, {})[0].passed


# ------------------------------------------------------------------------------ tokeniser


def test_tokenizers():
    assert tokenize("I Liked it , A LOT .") == ["i", "liked", "it", ",", "a", "lot", "."]
    assert tokenize("a , b", drop_punctuation=True, lowercase=False) == ["a", "b"]
    assert ptb_tokenize('He said "don\'t" ... it\'s $3.50! Larkin\'s well-known (book).') == [
        "He", "said", "``", "do", "n't", "''", "...", "it", "'s", "$", "3.50", "!",
        "Larkin", "'s", "well-known", "(", "book", ")", "."]
    assert tokenize("Don't.", split_punctuation=True) == ["do", "n't", "."]


# ------------------------------------------------------------------------------ vocabulary


def test_vocabulary_cap_counts_and_unk_mapping():
    docs = [["a", "b", "a", "c"], ["a", "b", "d", UNK]]
    vocab = build_vocabulary(docs, max_size=2)
    assert vocab.tokens == (UNK, EOS, "a", "b")
    # <unk> counts the occurrences of the words left out by the cap (c, d), not literal <unk>s
    assert vocab.counts == (2, 0, 3, 2)
    assert vocab.encode(["a", "c", "zzz", "b"]).tolist() == [2, 0, 0, 3]
    assert vocab.decode([3, 2]) == ["b", "a"] and vocab.id("d") == vocab.unk_id == 0
    # ties are broken alphabetically: c and d both occur once
    assert build_vocabulary(docs, max_size=3).tokens[-1] == "c"
    assert len(build_vocabulary(docs)) == 2 + 4
    assert build_vocabulary(docs, min_count=2).tokens == (UNK, EOS, "a", "b")


def test_encoding_and_windows():
    vocab = build_vocabulary([["x", "y", "x"]])
    ids, doc = encode_documents([["x", "y"], ["y", "q"]], vocab)
    x, y, eos, unk = vocab.id("x"), vocab.id("y"), vocab.id(EOS), vocab.unk_id
    assert ids.tolist() == [x, y, eos, y, unk, eos] and doc.tolist() == [0, 0, 0, 1, 1, 1]
    w = windows(np.arange(10), 3)
    assert w.tolist() == [[0, 1, 2, 3], [3, 4, 5, 6], [6, 7, 8, 9]]
    assert windows(np.arange(10), 3, max_windows=1).shape == (1, 4)
    assert windows(np.arange(3), 3).shape == (0, 4)


def test_encoding_keeps_empty_documents_and_works_without_eos():
    vocab = build_vocabulary([["x", "y"]])
    x, y, eos = vocab.id("x"), vocab.id("y"), vocab.id(EOS)
    ids, doc = encode_documents([[], ["x"], [], ["y", "x"]], vocab)
    assert ids.tolist() == [eos, x, eos, eos, y, x, eos] and doc.tolist() == [0, 1, 1, 2, 3, 3, 3]
    ids, doc = encode_documents(iter([["x"], [], ["q", "y"]]), vocab, eos=None)  # any iterable
    assert ids.tolist() == [x, vocab.unk_id, y] and doc.tolist() == [0, 2, 2]
    ids, doc = encode_documents([], vocab)
    assert ids.shape == doc.shape == (0,) and ids.dtype == doc.dtype == np.int64


def test_lowercased_whitespace_tokens_equal_the_tokens_lowercased_one_by_one():
    text = "İstanbul ÀB\tc\x0bD\xa0e ßX \x1cF ǅ ."  # non-ASCII case mappings, non-ASCII spaces
    assert tokenize(text) == [t.lower() for t in tokenize(text, lowercase=False)]


# ------------------------------------------------------------------------------ embedding


def test_cooccurrence_dense_and_sparse_counting_agree(monkeypatch):
    """Small vocabularies are counted into a dense array, large ones into sparse blocks."""
    import networkedfl.datasets._text as text

    rng = np.random.default_rng(0)
    ids, docs = rng.integers(0, 40, 3000), np.sort(rng.integers(0, 60, 3000))
    for weighting in ("uniform", "harmonic"):
        dense = cooccurrence_matrix(ids, docs, 40, window=4, weighting=weighting)
        monkeypatch.setattr(text, "DENSE_COOCCURRENCE_MAX", 0)
        sparse = cooccurrence_matrix(ids, docs, 40, window=4, weighting=weighting)
        monkeypatch.undo()
        assert dense.has_canonical_format and sparse.has_canonical_format
        np.testing.assert_allclose(dense.toarray(), sparse.toarray(), rtol=1e-14, atol=0)
        if weighting == "uniform":  # integer counts: exactly equal
            assert (dense != sparse).nnz == 0 and dense.nnz == sparse.nnz


def test_cooccurrence_counts_pairs_within_documents_symmetrically():
    ids = np.array([0, 1, 2, 0, 1])
    docs = np.array([0, 0, 0, 1, 1])
    m = cooccurrence_matrix(ids, docs, 3, window=2).toarray()
    # doc 0: (0,1) d1, (1,2) d1, (0,2) d2; doc 1: (0,1) d1; the 2-0 pair crosses documents
    expected = np.array([[0, 2, 1], [2, 0, 1], [1, 1, 0]], dtype=float)
    np.testing.assert_array_equal(m, expected)
    harmonic = cooccurrence_matrix(ids, docs, 3, window=2, weighting="harmonic").toarray()
    assert harmonic[0, 2] == 0.5 and harmonic[0, 1] == 2.0


def test_ppmi_by_hand():
    counts = np.array([[0.0, 2.0], [2.0, 2.0]])
    # N = 6, row sums (2, 4); with alpha = 1 the context probabilities are (2/6, 4/6)
    got = ppmi(counts, alpha=1.0).toarray()
    pmi = lambda c, r, q: math.log((c / 6) / ((r / 6) * q))  # noqa: E731
    assert got[0, 1] == pytest.approx(max(pmi(2, 2, 4 / 6), 0))
    assert got[1, 1] == pytest.approx(max(pmi(2, 4, 4 / 6), 0)) == 0.0
    assert got[0, 0] == 0.0


def test_ppmi_svd_embedding_separates_two_topics():
    rng = np.random.default_rng(0)
    docs = [rng.choice(5, 30) + 5 * (k % 2) for k in range(200)]  # topics {0..4} and {5..9}
    ids = np.concatenate(docs)
    doc = np.repeat(np.arange(len(docs)), 30)
    emb = ppmi_svd_embedding(ids, doc, 12, dim=4, window=3, seed=np.random.default_rng(1))
    again = ppmi_svd_embedding(ids, doc, 12, dim=4, window=3, seed=np.random.default_rng(1))
    np.testing.assert_array_equal(emb, again)
    assert emb.shape == (12, 4)
    np.testing.assert_allclose(np.linalg.norm(emb[:10], axis=1), 1.0)
    np.testing.assert_array_equal(emb[10:], 0.0)  # words never seen get zero rows
    sim = emb[:10] @ emb[:10].T
    within = np.mean([sim[i, j] for i in range(10) for j in range(10) if i != j and i // 5 == j // 5])
    across = np.mean([sim[i, j] for i in range(10) for j in range(10) if i // 5 != j // 5])
    assert within > 0.5 > across


def test_load_glove(tmp_path):
    vocab = build_vocabulary([["the", "cat"]])
    path = tmp_path / "glove.txt"
    path.write_text("The 1 2 3\nzebra 0 0 0\ncat 4 5 6\n")
    matrix, found = load_glove(path, vocab, dim=3, seed=np.random.default_rng(0), missing_scale=0.01)
    np.testing.assert_array_equal(matrix[vocab.id("the")], [1, 2, 3])
    np.testing.assert_array_equal(matrix[vocab.id("cat")], [4, 5, 6])
    assert found.tolist() == [False, False, True, True]
    assert np.all(np.abs(matrix[~found]) < 0.1) and np.any(matrix[~found] != 0)
    path.write_text("cat 1 2\n")
    with pytest.raises(ValueError, match="2 values, expected 3"):
        load_glove(path, vocab, dim=3, seed=np.random.default_rng(0))


def test_tfidf_and_knn_client_graph():
    counts = np.array([[3, 0, 1], [3, 0, 1], [0, 2, 1]], dtype=float)
    tfidf = tfidf_vectors(counts)
    np.testing.assert_allclose(np.linalg.norm(tfidf, axis=1), 1.0)
    idf = np.log(4 / 3) + 1  # terms in 2 of 3 documents; the last (in all 3) has idf 1
    row = np.array([3 * idf, 0, 1]) / np.linalg.norm([3 * idf, 0, 1])
    np.testing.assert_allclose(tfidf[0], row)
    sim = np.array([[1.0, 0.9, 0.1, 0.2], [0.9, 1.0, 0.3, 0.1], [0.1, 0.3, 1.0, 0.8], [0.2, 0.1, 0.8, 1.0]])
    g = knn_similarity_graph(sim, 1)
    assert g.edges.tolist() == [[0, 1], [2, 3]] and g.weights.tolist() == [0.9, 0.8]
    g2 = knn_similarity_graph(sim, 2)  # adds 0-3 (0's second), 1-2 (1's and 2's second)
    assert g2.edges.tolist() == [[0, 1], [0, 3], [1, 2], [2, 3]]


def test_unigram_reference_is_each_clients_smoothed_target_frequencies():
    """Fig. 10.4's predict-the-mean: client i's add-one smoothed unigram of its training
    targets (every window's inputs[1:]), scored by mean cross-entropy on its test targets."""

    from networkedfl.experiments.gfl.reviews_nlp import unigram_losses

    train = [np.array([[0, 1, 1, 2]]), np.array([[3, 3, 3], [1, 3, 0]])]
    test = [np.array([[2, 1, 0]]), np.array([[0, 3, 2]])]
    got = unigram_losses(train, test, vocab_size=4)
    p0 = (np.array([0, 2, 1, 0]) + 1) / 7   # targets 1, 1, 2
    p1 = (np.array([1, 0, 0, 3]) + 1) / 8   # targets 3, 3, 3, 0
    expected = [-(np.log(p0[1]) + np.log(p0[0])) / 2, -(np.log(p1[3]) + np.log(p1[2])) / 2]
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_review_task_is_built_once_per_process_from_the_keys_it_reads(corpus, test_config):
    """Fig. 10.4's runs share one task per seed: the preparation reads only ``TASK_KEYS``
    (a mapping that records its reads), the cached task equals a fresh one array for array,
    a change of a method's value reuses it, and a change of a task key or the seed does not."""
    from collections import UserDict

    from networkedfl.experiments import rng_for
    from networkedfl.experiments.gfl.reviews_nlp import TASK_KEYS, prepare_review_task, review_task

    params = dict(test_config["experiments"]["gfl_fig10_4_reviews_nlp"])

    class Recording(UserDict):
        read: set = set()

        def __getitem__(self, key):
            Recording.read.add(key)
            return super().__getitem__(key)

    fresh = prepare_review_task(Recording(params), corpus, rng_for(7, "gfl_fig10_4_reviews_nlp", 0, "data"))
    assert Recording.read and Recording.read <= set(TASK_KEYS)
    cached = review_task(params, corpus, 7, "gfl_fig10_4_reviews_nlp", 0)
    assert review_task({**params, "lr": 123.0, "bigfl": {}}, corpus, 7, "gfl_fig10_4_reviews_nlp", 0) is cached
    for a, b in [(fresh.embedding, cached.embedding), (fresh.present, cached.present),
                 (fresh.similarity, cached.similarity), *zip(fresh.train, cached.train, strict=True),
                 *zip(fresh.test, cached.test, strict=True)]:
        np.testing.assert_array_equal(a, b)
    assert review_task({**params, "window": 6}, corpus, 7, "gfl_fig10_4_reviews_nlp", 0) is not cached
    assert review_task(params, corpus, 7, "gfl_fig10_4_reviews_nlp", 1) is not cached


def test_fig10_4_methods_of_a_seed_draw_the_same_mini_batches(corpus, test_config, monkeypatch):
    """Issue 34: the comparison is paired by seed, the draws shared: FedAvg, Local, DFL-SGD and
    DFL-GT of one seed draw the same sequence of mini-batches (DFL-GT one step ahead: its
    tracker's first gradient takes the first), FeSEM and BiG-FL the same in their first round;
    another seed draws others."""
    from networkedfl.experiments.gfl.reviews_nlp import run_review_nlp
    from networkedfl.nn import NextWordBatches

    params = test_config["experiments"]["gfl_fig10_4_reviews_nlp"]
    files = [str(corpus / name) for name in review_files(DOMAINS, ("train", "test"))]
    drawn, real = [], NextWordBatches.sample

    def spy(self, batch_size, generator):
        batch = real(self, batch_size, generator)
        drawn.append(batch[0].clone())
        return batch

    monkeypatch.setattr(NextWordBatches, "sample", spy)
    batches = {}
    for method, seed in [("fedavg", 0), ("local", 0), ("dfl_sgd", 0), ("dfl_gt", 0), ("fesem", 0), ("bigfl", 0),
                         ("fedavg", 1)]:
        drawn.clear()
        run_review_nlp(params, method, seed, 5, inputs={"corpus": files}, experiment_id="gfl_fig10_4_reviews_nlp")
        batches[method, seed] = list(drawn)
    steps = params["rounds"] * params["local_steps"]
    assert len(batches["dfl_gt", 0]) == steps + 1  # the tracker's first gradient draws one more first
    for method in ("local", "dfl_sgd", "dfl_gt"):
        assert all(bool((a == b).all()) for a, b in zip(batches[method, 0][:steps], batches["fedavg", 0],
                                                        strict=True))
    for method in ("fesem", "bigfl"):  # the first round's local steps
        first = params["local_steps"]
        assert all(bool((a == b).all()) for a, b in zip(batches[method, 0][:first], batches["fedavg", 0][:first],
                                                        strict=True))
    assert not all(bool((a.shape == b.shape) and (a == b).all())
                   for a, b in zip(batches["fedavg", 1], batches["fedavg", 0], strict=True))
