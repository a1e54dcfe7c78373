"""DP: the Chu-Liu-Edmonds, Eisner and second-order head-final decoders against brute force, and the perceptron
parser (first and second order) on planted sentences."""
from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from baselines.tasks.dp import (DpSentence, DpWord, MstParser, eojeol_attributes, is_head_final, is_projective,
                                targets, tree_problem)
from baselines.tasks.dp.features import (ROOT, grand_features, grand_triples, relation_features, sibling_features,
                                        sibling_triples)
from baselines.tasks.dp.parser import _Perceptron, grand_rows, sibling_rows
from baselines.tasks.dp.trees import (head_final_grand_sibling_tree, head_final_sibling_tree, max_spanning_tree,
                                      projective_tree)
from model_files import assert_persists_and_refused_without
from helpers import beats_the_sample_floor


def is_single_root_tree(heads) -> bool:
    size = len(heads)
    for dependent in range(1, size):
        seen, node = set(), dependent
        while node != 0:
            if node in seen:
                return False
            seen.add(node)
            node = heads[node]
    return sum(heads[d] == 0 for d in range(1, size)) == 1


def crosses(heads) -> bool:
    """Whether two arcs of the tree cross, by comparing every pair (the slow definition)."""
    spans = [(min(h, d), max(h, d)) for d, h in enumerate(heads) if d > 0]
    return any(a < c < b < e for a, b in spans for c, e in spans)


def tree_score(scores: np.ndarray, heads: np.ndarray) -> float:
    """The sum of the scores of a tree's arcs (heads[0] is the root's own, unused)."""
    return float(scores[heads[1:], np.arange(1, len(heads))].sum())


def brute_force_best(scores: np.ndarray, projective: bool = False) -> float:
    size = scores.shape[0]
    best = -np.inf
    for heads in itertools.product(range(size), repeat=size - 1):
        heads = (0,) + heads
        if any(heads[d] == d for d in range(1, size)) or not is_single_root_tree(heads):
            continue
        if projective and crosses(heads):
            continue
        best = max(best, sum(scores[heads[d], d] for d in range(1, size)))
    return best


def test_decoder_returns_a_single_root_tree_for_random_scores():
    rng = np.random.default_rng(7)
    for size in (2, 5, 12, 40):
        for _ in range(20):
            assert is_single_root_tree(max_spanning_tree(rng.normal(size=(size, size))))


def test_decoder_finds_the_maximum_on_small_cases():
    rng = np.random.default_rng(11)
    for _ in range(150):
        size = int(rng.integers(2, 7))
        scores = rng.normal(size=(size, size))
        assert tree_score(scores, max_spanning_tree(scores)) == pytest.approx(brute_force_best(scores))


def test_decoder_can_return_a_non_projective_tree():
    # 1 <- 3 and 2 <- 4 cross; the scores make that the only good tree.
    scores = np.full((5, 5), -10.0)
    scores[0, 4] = scores[4, 3] = 5.0
    scores[3, 1] = scores[4, 2] = 5.0
    assert list(max_spanning_tree(scores)) == [0, 3, 4, 4, 0]


def test_projective_decoder_finds_the_best_projective_tree_on_small_cases():
    rng = np.random.default_rng(13)
    for _ in range(150):
        size = int(rng.integers(2, 7))
        scores = rng.normal(size=(size, size))
        heads = projective_tree(scores)
        assert is_single_root_tree(heads) and not crosses(heads)
        assert tree_score(scores, heads) == pytest.approx(brute_force_best(scores, projective=True))


def test_projective_decoder_avoids_forbidden_arcs_and_crossings():
    scores = np.full((5, 5), -10.0)
    scores[0, 4] = scores[4, 3] = 5.0
    scores[3, 1] = scores[4, 2] = 5.0  # the crossing tree that Chu-Liu-Edmonds returns above
    heads = projective_tree(scores)
    assert not crosses(heads) and list(heads) != [0, 3, 4, 4, 0]
    head_final = np.full((6, 6), -np.inf)
    for dependent in range(1, 5):
        head_final[dependent + 1:, dependent] = 1.0
    head_final[0, 5] = 0.0
    heads = projective_tree(head_final)
    assert heads[5] == 0 and all(heads[d] > d for d in range(1, 5))


def head_final_trees(size: int):
    """Every head-final projective tree over words 1..size (heads 1-based, entry 0 unused)."""
    for chosen in itertools.product(*[range(word + 1, size + 1) for word in range(1, size)]):
        heads = (0, *chosen, 0)
        if is_projective(heads[1:]):
            yield np.array(heads)


def second_order_score(scores: np.ndarray, siblings: np.ndarray, heads: np.ndarray) -> float:
    """A tree's arcs plus, per head, its leftmost dependent's and each neighbouring pair's sibling score."""
    total = tree_score(scores, heads)
    for head in range(1, len(heads)):
        dependents = [0] + [d for d in range(1, len(heads)) if heads[d] == head]
        total += sum(siblings[head, a, b] for a, b in zip(dependents, dependents[1:]))
    return total


def test_second_order_decoder_finds_the_best_head_final_tree_on_small_cases():
    rng = np.random.default_rng(17)
    for size in range(1, 7):
        for _ in range(25):
            scores, siblings = rng.normal(size=(size + 1, size + 1)), rng.normal(size=(size + 1,) * 3)
            heads = head_final_sibling_tree(scores, siblings)
            assert is_head_final(heads[1:]) and is_projective(heads[1:])
            best = max(second_order_score(scores, siblings, tree) for tree in head_final_trees(size))
            assert second_order_score(scores, siblings, heads) == pytest.approx(best)


def grandparent_score(scores: np.ndarray, siblings: np.ndarray, grands: np.ndarray, heads: np.ndarray) -> float:
    """second_order_score plus, for each arc h -> d below the root's child, grands[head of h, h, d]."""
    return second_order_score(scores, siblings, heads) + sum(
        grands[heads[heads[d]], heads[d], d] for d in range(1, len(heads)) if heads[d] > 0)


def test_grandparent_decoder_finds_the_best_head_final_tree_on_small_cases():
    rng = np.random.default_rng(23)
    for size in range(1, 7):
        for _ in range(25):
            scores, siblings, grands = (rng.normal(size=(size + 1,) * dimensions) for dimensions in (2, 3, 3))
            heads = head_final_grand_sibling_tree(scores, siblings, grands)
            assert is_head_final(heads[1:]) and is_projective(heads[1:])
            best = max(grandparent_score(scores, siblings, grands, tree) for tree in head_final_trees(size))
            assert grandparent_score(scores, siblings, grands, heads) == pytest.approx(best)


def test_grandparent_decoder_without_grandparent_scores_is_the_sibling_decoder():
    rng = np.random.default_rng(29)
    for size in (1, 2, 5, 9, 20):
        scores, siblings = rng.normal(size=(size + 1, size + 1)), rng.normal(size=(size + 1,) * 3)
        assert np.array_equal(head_final_grand_sibling_tree(scores, siblings, np.zeros((size + 1,) * 3)),
                              head_final_sibling_tree(scores, siblings))


def test_second_order_decoder_without_sibling_scores_is_eisner_on_head_final_arcs():
    rng = np.random.default_rng(19)
    for size in (2, 5, 9, 15):
        scores = rng.normal(size=(size + 1, size + 1))
        head_final = np.where(np.arange(size + 1)[:, None] > np.arange(size + 1)[None, :], scores, -np.inf)
        head_final[0, size] = scores[0, size]
        heads = head_final_sibling_tree(scores, np.zeros((size + 1,) * 3))
        assert tree_score(head_final, heads) == pytest.approx(tree_score(head_final, projective_tree(head_final)))


def test_sibling_rows_are_the_trees_leftmost_dependents_and_neighbouring_pairs():
    tree = np.array([0, 4, 3, 4, 0])  # 1 <- 4, 2 <- 3, 3 <- 4, 4 <- root
    heads, outer, inner = sibling_triples(4)
    features = np.zeros((len(heads), 1), dtype=np.int32)
    rows = sibling_rows((heads, outer, inner, features), tree)
    assert sorted(zip(heads[rows].tolist(), outer[rows].tolist(), inner[rows].tolist())) == [
        (3, 0, 2), (4, 0, 1), (4, 1, 3)]


def test_grand_rows_are_the_trees_chains_of_grandparent_head_and_dependent():
    tree = np.array([0, 4, 3, 4, 0])  # 1 <- 4, 2 <- 3, 3 <- 4, 4 <- root
    grands, heads, dependents = grand_triples(4)
    rows = grand_rows((grands, heads, dependents, np.zeros((len(heads), 1), dtype=np.int32)), tree)
    assert sorted(zip(grands[rows].tolist(), heads[rows].tolist(), dependents[rows].tolist())) == [
        (0, 4, 1), (0, 4, 3), (4, 3, 2)]


def test_tree_shapes_agree_with_their_definitions():
    for size in range(1, 6):
        for heads in itertools.product(range(size + 1), repeat=size):
            if tree_problem(list(heads)) is None:
                assert is_projective(heads) == (not crosses((0,) + heads))
                assert is_head_final(heads) == (heads[-1] == 0 and all(h > d for d, h in enumerate(heads[:-1], 1)))


def planted_sentence(guid: str, nouns: list[str]) -> DpSentence:
    """'N1이 N2를 N3에서 봤다.': every noun phrase depends on the final verb."""
    words = [DpWord(f"{nouns[0]}이", f"{nouns[0]} 이", "NNG+JKS", 4, "NP_SBJ"),
             DpWord(f"{nouns[1]}를", f"{nouns[1]} 를", "NNG+JKO", 4, "NP_OBJ"),
             DpWord(f"{nouns[2]}에서", f"{nouns[2]} 에서", "NNG+JKB", 4, "NP_AJT"),
             DpWord("봤다.", "보 았 다 .", "VV+EP+EF+SF", 0, "VP")]
    return DpSentence(guid, " ".join(w.form for w in words), words)


NOUNS = ["학생", "책", "도서관", "친구", "영화", "극장", "아이", "공", "공원", "가수", "노래", "무대"]


def test_perceptron_parses_planted_sentences_back(tmp_path):
    rng = np.random.default_rng(3)
    train = [planted_sentence(f"p{i}", list(rng.choice(NOUNS, 3, replace=False))) for i in range(30)]
    model = MstParser(epochs=3, dimension=2 ** 16).fit(train, targets(train))
    test = [planted_sentence("q", ["선생", "편지", "교실"])]
    heads, deprels = model.predict(test)[0]
    assert heads == [4, 4, 4, 0]
    assert deprels == ["NP_SBJ", "NP_OBJ", "NP_AJT", "VP"]
    # as a parser saved before the weights were kept per used slot
    assert_persists_and_refused_without(tmp_path, model, "dp", "mst", test, "arc_slots_",
                                        "every hashed arc-feature slot; train the model again")


def test_the_parser_keeps_weights_only_for_slots_that_have_one_and_scores_as_with_all_slots():
    rng = np.random.default_rng(4)
    train = [planted_sentence(f"p{i}", list(rng.choice(NOUNS, 3, replace=False))) for i in range(30)]
    model = MstParser(epochs=3, dimension=2 ** 16).fit(train, targets(train))
    slots, weights = model.arc_slots_, model.weights_
    assert np.all(np.diff(slots) > 0) and 0 < len(slots) < 2 ** 16
    assert len(weights) == len(slots) + 1 and weights[-1] == 0 and np.all(weights[:-1] != 0)
    every_slot = np.zeros(2 ** 16)
    every_slot[slots] = weights[:-1]
    test = planted_sentence("q", ["선생", "편지", "교실"])
    heads, dependents, hashed = model.featurizer_.arcs(test)
    shaped = (heads > dependents) | ((heads == 0) & (dependents == len(test.words)))  # head-final training trees
    _heads, _dependents, indices = model._shaped_arcs(test, model._slot_index())
    assert len(indices) == shaped.sum() < len(hashed)
    assert np.array_equal(weights[indices].sum(axis=1), every_slot[hashed[shaped]].sum(axis=1))


def test_the_relation_labeller_sees_the_context_asked_for_and_keeps_only_frequent_features():
    sentence = planted_sentence("p", ["학생", "책", "도서관"])
    attributes = [ROOT] + [eojeol_attributes(w) for w in sentence.words]
    heads = [w.head for w in sentence.words]
    arc, context, tree = (relation_features(sentence, attributes, 2, 4, shown, heads)
                          for shown in ("arc", "context", "tree"))
    assert set(arc) < set(context) < set(tree)
    assert {"d-1_last_pos=JKS", "d+1_first_pos=NNG", "h_form=봤다."} <= set(context) - set(arc)
    assert {"outward=1", "adjacent=False|JKO", "own_dependents=0|JKO"} == set(tree) - set(context)
    assert "outward=0" in relation_features(sentence, attributes, 3, 4, "tree", heads)  # the nearest dependent
    rng = np.random.default_rng(5)
    train = [planted_sentence(f"p{i}", list(rng.choice(NOUNS, 3, replace=False))) for i in range(30)]
    train_rows = [row for s in train for row in
                  MstParser()._relation_rows(s, [w.head for w in s.words])]
    arcs_fired = {}
    for row in train_rows:
        for name in row:
            arcs_fired[name] = arcs_fired.get(name, 0) + 1
    for least in (1, 3):
        model = MstParser(epochs=1, dimension=2 ** 16, label_min_count=least).fit(train, targets(train))
        kept = set(model.relation_vectorizer_.get_feature_names_out())
        assert kept == {name for name, count in arcs_fired.items() if count >= least}
        assert model.relation_classifier_.coef_.shape[1] == len(kept)
    assert {name for name, count in arcs_fired.items() if count < 3}  # so the two fits above differ


def test_eojeol_attributes_skip_final_punctuation():
    attributes = eojeol_attributes(DpWord("흘렸다.", "흘리 었 다 .", "VV+EP+EF+SF"))
    assert attributes["last_pos"] == "EF" and attributes["last_lemma"] == "다/EF"
    assert attributes["first_lemma"] == "흘리/VV"
    assert attributes["trail"] == "SF" and attributes["last2"] == "EP+EF"
    plain = eojeol_attributes(DpWord("학생이", "학생 이", "NNG+JKS"))
    assert plain["trail"] == "-" and plain["last2"] == "NNG+JKS"
    assert eojeol_attributes(DpWord("책", "책", "NNG"))["last2"] == "NNG"


def test_the_labeller_reads_what_ends_the_dependent_and_the_arcs_do_not():
    sentence = planted_sentence("t", ["학생", "책", "도서관"])
    words = list(sentence.words)
    words[0] = DpWord("학생이,", "학생 이 ,", "NNG+JKS+SP", words[0].head, words[0].deprel)
    sentence = DpSentence(sentence.guid, " ".join(w.form for w in words), words)
    attributes = [ROOT] + [eojeol_attributes(w) for w in sentence.words]
    features = relation_features(sentence, attributes, 1, 4, "arc")
    assert {"d_trail=SP", "d_last2=NNG+JKS"} <= set(features)
    model = MstParser(epochs=1, dimension=2 ** 16, min_count=1, label_min_count=1).fit([sentence], targets([sentence]))
    assert not any(key.startswith(("trail=", "last2=")) for key in model.featurizer_.vocabulary)
    assert "d_trail=SP" in model.relation_vectorizer_.get_feature_names_out()


def test_kiwi_pos_replaces_annotated_lemmas_and_tags():
    from baselines.tasks.dp import with_kiwi_pos

    sentence = planted_sentence("k", ["학생", "책", "도서관"])
    converted = with_kiwi_pos([sentence])[0]
    assert [w.form for w in converted.words] == [w.form for w in sentence.words]
    assert converted.words[0].pos.startswith("NNG") and converted.words[0].pos.endswith("JKS")
    assert converted.words[3].pos.split("+")[0] == "VV" and converted.words[3].head == 0


def test_predict_dp_raw_text_as_official_tsv_and_score_it(tmp_path):
    from click.testing import CliRunner

    from baselines.cli import main
    from baselines.data.sources import sample_dir
    from baselines.runner.registry import get_task

    runner = CliRunner()
    raw = tmp_path / "raw.jsonl"
    raw.write_text('{"guid": "s1", "text": "학생이 책을 도서관에서 봤다."}\n', encoding="utf-8")
    output = tmp_path / "raw.tsv"
    result = runner.invoke(main, ["-q", "predict", "dp", "--pos", "kiwi", "--input", str(raw), "--output",
                                  str(output), "--format", "tsv"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    parsed = get_task("dp").reading.load(output)
    assert [w.form for w in parsed[0].words] == ["학생이", "책을", "도서관에서", "봤다."]
    assert sum(w.head == 0 for w in parsed[0].words) == 1

    gold = sample_dir("dp") / "klue-dp-v1.1" / "klue-dp-v1.1_dev.tsv"
    predicted = tmp_path / "dev.tsv"
    result = runner.invoke(main, ["-q", "predict", "dp", "--input", str(gold), "--output", str(predicted),
                                  "--format", "tsv"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    scored = runner.invoke(main, ["-q", "score", "dp", "--gold", str(gold), "--predictions", str(predicted), "--json"],
                           catch_exceptions=False)
    assert scored.exit_code == 0, scored.output
    metrics = json.loads(scored.output)["metrics"]
    assert beats_the_sample_floor("dp", "uas_micro_f1", metrics["uas_micro_f1"])


def test_arc_features_of_different_distances_do_not_share_an_index():
    """The hashed arc features stay in integer arithmetic: a float would fold arcs of different shapes onto one
    index (it once did, through a signed term in the arc's shape)."""
    from baselines.tasks.dp import ArcFeaturizer
    words = [DpWord(f"말{i}", "말", "NNG", 0, "NP") for i in range(1, 16)]
    sentence = DpSentence("planted", " ".join(w.form for w in words), words)
    heads, dependents, features = ArcFeaturizer({}, 2 ** 22).arcs(sentence)
    to_last = heads == len(words)
    shape_column = 1  # the first template joined with the arc's direction and distance
    distances = np.abs(heads[to_last] - dependents[to_last])
    buckets = np.minimum(distances, 5) + (distances > 7) + (distances > 12)
    indices = features[to_last, shape_column]
    assert len(set(indices.tolist())) == len(set(buckets.tolist())) == 7


def test_the_arc_scorer_shows_its_strongest_features_by_name():
    from baselines import api
    model = api.fit("dp", api.data_file("dp", "train"))
    sections = model.top_features(5)
    for section, sign in (("arc scorer: for an arc", 1), ("arc scorer: against an arc", -1)):
        weights = [weight for _name, weight in sections[section]]
        assert len(weights) == 5 and all(sign * w > 0 for w in weights)
        assert weights == sorted(weights, reverse=sign > 0)
        assert all(name.startswith(("h", "h-1", "h+1")) and "=" in name for name, _ in sections[section])
    named = dict(model.arc_feature_names_)
    assert {float(model.weights_[index]) for index in named} >= set(
        weight for section in ("arc scorer: for an arc", "arc scorer: against an arc")
        for _name, weight in sections[section])


def test_a_fold_copy_names_no_features_and_parses_as_the_named_parser(tmp_path):
    from click.testing import CliRunner

    from baselines import api
    from baselines.cli import main
    rng = np.random.default_rng(7)
    train = [planted_clause(f"p{i}", list(rng.choice(NOUNS, 3, replace=False))) for i in range(30)]
    test = [planted_clause("q", ["선생", "편지", "교실"]), planted_clause("r", ["가수", "노래", "무대"])]
    named = MstParser(epochs=2, dimension=2 ** 16, random_state=3)
    unnamed = named.fold_copy()
    assert unnamed.get_params() == {**named.get_params(), "name_features": False}
    for model in (named, unnamed):
        model.fit(train, targets(train))
    assert named.arc_feature_names_ and unnamed.arc_feature_names_ is None
    assert named.predict(test) == unnamed.predict(test)
    assert np.array_equal(named.weights_, unnamed.weights_)
    with pytest.raises(ValueError, match="name_features=False"):
        unnamed.top_features()
    unnamed.set_params(name_features=True)  # the fitted state, not the parameter, says what was named
    with pytest.raises(ValueError, match="name_features=False"):
        unnamed.top_features()
    # explain refuses it before training, in one line
    result = CliRunner().invoke(main, ["explain", "dp", "--param", "name_features=false"])
    assert result.exit_code != 0 and result.output.startswith("Error: ") and "name_features" in result.output
    assert result.output.count("\n") == 1
    assert api.check_explainable("dp", named) is None


def planted_clause(guid: str, nouns: list[str]) -> DpSentence:
    """'N1이 N2를 읽은 N3를 봤다.': the object belongs to the relative clause, the rest to the final verb."""
    words = [DpWord(f"{nouns[0]}이", f"{nouns[0]} 이", "NNG+JKS", 5, "NP_SBJ"),
             DpWord(f"{nouns[1]}를", f"{nouns[1]} 를", "NNG+JKO", 3, "NP_OBJ"),
             DpWord("읽은", "읽 은", "VV+ETM", 4, "VP_MOD"),
             DpWord(f"{nouns[2]}를", f"{nouns[2]} 를", "NNG+JKO", 5, "NP_OBJ"),
             DpWord("봤다.", "보 았 다 .", "VV+EP+EF+SF", 0, "VP")]
    return DpSentence(guid, " ".join(w.form for w in words), words)


def test_second_order_parser_learns_sibling_weights_parses_back_and_persists(tmp_path):
    rng = np.random.default_rng(6)
    train = [planted_clause(f"p{i}", list(rng.choice(NOUNS, 3, replace=False))) for i in range(30)]
    model = MstParser(epochs=3, dimension=2 ** 16, order=2, warm_epochs=0).fit(train, targets(train))
    test = [planted_clause("q", ["선생", "편지", "교실"])]
    assert model.predict(test)[0] == ([5, 3, 4, 5, 0], ["NP_SBJ", "NP_OBJ", "VP_MOD", "NP_OBJ", "VP"])
    _heads, _outer, _inner, hashed = sibling_features(model.featurizer_, train[0])
    assert model.order_ == 2
    assert np.any(model.weights_[model._slot_index()[hashed]] != 0)  # the sibling features were learnt
    named = [name for pairs in model.top_features(top_k=100).values() for name, _weight in pairs]
    assert any(name.startswith(("siblings: ", "leftmost dependent: ")) for name in named)
    assert_persists_and_refused_without(tmp_path, model, "dp", "mst", test, "order_", "without second-order parsing")


def test_third_order_parser_learns_grandparent_weights_and_parses_back():
    rng = np.random.default_rng(6)
    train = [planted_clause(f"p{i}", list(rng.choice(NOUNS, 3, replace=False))) for i in range(30)]
    model = MstParser(epochs=3, dimension=2 ** 16, order=3, warm_epochs=0).fit(train, targets(train))
    test = [planted_clause("q", ["선생", "편지", "교실"])]
    assert model.order_ == 3
    assert model.predict(test)[0] == ([5, 3, 4, 5, 0], ["NP_SBJ", "NP_OBJ", "VP_MOD", "NP_OBJ", "VP"])
    *_ends, hashed = grand_features(model.featurizer_, train[0])
    assert np.any(model.weights_[model._slot_index()[hashed]] != 0)  # the grandparent features were learnt
    named = [name for pairs in model.top_features(top_k=100).values() for name, _weight in pairs]
    assert any(name.startswith("grandparent: ") for name in named)


def test_several_perceptrons_give_the_mean_of_their_averaged_weights_and_the_first_is_the_one_alone(monkeypatch):
    rng = np.random.default_rng(6)
    train = [planted_clause(f"p{i}", list(rng.choice(NOUNS, 3, replace=False))) for i in range(30)]
    made = []
    averaged = _Perceptron.averaged

    def recorded(perceptron):
        made.append(averaged(perceptron))
        return made[-1].copy()  # the fit adds into what it gets

    monkeypatch.setattr(_Perceptron, "averaged", recorded)
    three = MstParser(epochs=1, warm_epochs=1, perceptrons=3, order=3, dimension=2 ** 16).fit(train, targets(train))
    assert len(made) == 3 and not np.array_equal(made[0], made[1])  # each met the sentences in its own orders
    mean = (made[0] + made[1] + made[2]) / 3
    assert np.array_equal(three.weights_[:-1], mean[mean != 0])
    first = made[0]
    made.clear()
    one = MstParser(epochs=1, warm_epochs=1, perceptrons=1, order=3, dimension=2 ** 16).fit(train, targets(train))
    assert len(made) == 1 and np.array_equal(made[0], first)
    assert np.array_equal(one.weights_[:-1], first[first != 0])


def test_second_order_is_used_only_where_the_learnt_shape_is_head_final_and_projective():
    rng = np.random.default_rng(8)
    train = [planted_sentence(f"p{i}", list(rng.choice(NOUNS, 3, replace=False))) for i in range(10)]
    left = planted_sentence("left", ["학생", "책", "도서관"])
    left.words[1].head = 1
    assert MstParser(epochs=1, dimension=2 ** 16, order=2).fit(train, targets(train)).order_ == 2
    assert MstParser(epochs=1, dimension=2 ** 16, order=3).fit(train, targets(train)).order_ == 3
    assert MstParser(epochs=1, dimension=2 ** 16, order=3).fit(train + [left], targets(train + [left])).order_ == 1
    assert MstParser(epochs=1, dimension=2 ** 16, order=1).fit(train, targets(train)).order_ == 1
    mixed = MstParser(epochs=1, dimension=2 ** 16, order=2).fit(train + [left], targets(train + [left]))
    free = MstParser(epochs=1, dimension=2 ** 16, order=2, structure="free").fit(train, targets(train))
    assert mixed.order_ == free.order_ == 1


def test_learnt_structure_keeps_predictions_to_the_training_trees_shape():
    rng = np.random.default_rng(5)
    train = [planted_sentence(f"p{i}", list(rng.choice(NOUNS, 3, replace=False))) for i in range(20)]
    # Every training tree is head-final and projective; an untrained parser would attach anywhere.
    test = [DpSentence("t", "a b c d e f", [DpWord(form, form, "NNG") for form in "abcdef"])]
    shaped = MstParser(epochs=1, dimension=2 ** 16).fit(train, targets(train))
    assert shaped.head_final_ and shaped.projective_
    heads, _ = shaped.predict(test)[0]
    assert is_head_final(heads) and is_projective(heads)
    free = MstParser(epochs=1, dimension=2 ** 16, structure="free").fit(train, targets(train))
    assert not free.head_final_ and not free.projective_
    assert not is_head_final(free.predict(test)[0][0])  # so the shape above is the decoder's doing
    # A training tree with a head on the left: the learnt shape is no longer head-final.
    left = planted_sentence("left", ["학생", "책", "도서관"])
    left.words[1].head = 1
    mixed = MstParser(epochs=1, dimension=2 ** 16).fit(train + [left], targets(train + [left]))
    assert not mixed.head_final_ and mixed.projective_


def test_predict_dp_on_raw_text_uses_and_names_the_parser_trained_on_kiwi_tags(tmp_path):
    from baselines import api

    raw = tmp_path / "raw.jsonl"
    raw.write_text('{"guid": "s1", "text": "학생이 책을 도서관에서 봤다."}\n', encoding="utf-8")
    said = []
    rows = api.predict_file("dp", raw, log=said.append)
    assert any("the input has no POS tags" in line and "using mst-kiwi" in line for line in said), said
    assert any("fitting mst-kiwi" in line for line in said), said
    assert rows == api.predict_file("dp", raw, pos="kiwi")
    said.clear()
    api.predict_file("dp", raw, pos="gold", log=said.append)
    assert any("fitting mst " in line for line in said) and not any("no POS tags" in line for line in said), said
