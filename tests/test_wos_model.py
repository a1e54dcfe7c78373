"""WoS tracker: value normalisation, value finding, carry-over, a planted yes/no slot, context, stated yes/no
conditions, persistence."""
from __future__ import annotations

import random

import pytest

from baselines.runtime.provenance import versions
from baselines.errors import ModelFileError
from baselines.runner.persistence import load_model, save_model
from baselines.tasks.wos import (CONTEXTS, DialogueStateTracker, ValueFinder, WosDialogue, WosTurn, gate_tokens,
                                 normalize_count, normalize_nights, normalize_time, referenced_value, slot_dict,
                                 stated_conditions, targets)


@pytest.mark.parametrize("written, expected", [
    ("금요일 23시20분에", ["23:20"]), ("오후 3시에 만나요", ["15:00"]), ("7시 반으로", ["07:30"]),
    ("저녁 6시 30분", ["18:30"]), ("18:28에 두명", ["18:28"]), ("1시 40분에 출발", ["01:40"]), ("시간은 상관없어요", []),
])
def test_times(written, expected):
    assert normalize_time(written) == expected


@pytest.mark.parametrize("written, expected", [
    ("두명 예약", ["2"]), ("2명이요", ["2"]), ("열 사람", ["10"]), ("다섯명 갈거에요", ["5"]), ("명동에서", []),
    ("혼자 갈 거예요", ["1"]),
])
def test_head_counts(written, expected):
    assert normalize_count(written) == expected


@pytest.mark.parametrize("written, expected", [
    ("2박 3일", ["2", "3"]), ("이틀간 묵을게요", ["2"]), ("3일동안", ["3"]), ("하루만", ["1"]), ("토요일에", []),
])
def test_stay_lengths(written, expected):
    assert normalize_nights(written) == expected


ONTOLOGY = {"식당-지역": ["none", "dontcare", "서울 동쪽", "서울 서쪽"], "숙소-지역": ["none", "서울 동쪽"],
            "식당-주차 가능": ["none", "dontcare", "yes", "no"], "관광-이름": ["none", "명동 쇼핑 거리"],
            "택시-출발지": ["none", "잠실역", "왕십리역"], "택시-도착지": ["none", "잠실역", "왕십리역"],
            "식당-예약 시간": ["none", "23:20"]}


def test_value_finder_ignores_spacing_and_tells_origin_from_destination():
    finder = ValueFinder(ONTOLOGY)
    found = finder.find("명동쇼핑거리 근처 서울 동쪽 식당이요. 잠실역에서 왕십리역까지 23시20분에")
    assert found["관광-이름"] == ["명동 쇼핑 거리"]
    assert found["식당-지역"] == found["숙소-지역"] == ["서울 동쪽"]  # the gates decide which one is meant
    assert found["택시-출발지"] == ["잠실역"] and found["택시-도착지"] == ["왕십리역"]
    assert found["식당-예약 시간"] == ["23:20"]
    assert finder.find("서쪽에 있는 곳이요")["식당-지역"] == ["서울 서쪽"]  # all the dialogues are in Seoul


def test_references_to_other_domains():
    state = {"숙소-이름": "블랭크 모텔", "식당-이름": "매일식사", "식당-예약 요일": "금요일"}
    assert referenced_value("택시-출발지", "숙소에서 식당까지 가는 택시요", state) == "블랭크 모텔"
    assert referenced_value("택시-도착지", "숙소에서 식당까지 가는 택시요", state) == "매일식사"
    assert referenced_value("숙소-예약 요일", "같은 날로 해주세요", state) == "금요일"
    assert referenced_value("숙소-예약 요일", "토요일로 해주세요", state) is None


def planted_dialogues(count: int, seed: int) -> list[WosDialogue]:
    """A parking wish (yes), a refusal of parking (no) or neither, then a region, then small talk that
    must keep the state."""
    rng = random.Random(seed)
    dialogues = []
    for index in range(count):
        wish, region = rng.choice(["yes", "no", None]), rng.choice(["서울 동쪽", "서울 서쪽"])
        first = {"yes": "주차가 가능한 식당을 찾아요.", "no": "주차는 필요 없는 식당을 찾아요.",
                 None: "식당을 찾고 있어요."}[wish]
        state = [f"식당-주차 가능-{wish}"] if wish else []
        turns = [WosTurn("user", first, list(state)), WosTurn("sys", "어느 지역을 원하세요?")]
        state.append(f"식당-지역-{region}")
        turns += [WosTurn("user", f"{region}으로 부탁해요.", sorted(state)), WosTurn("sys", "알겠습니다.")]
        turns.append(WosTurn("user", "감사합니다.", sorted(state)))
        dialogues.append(WosDialogue(f"w{seed}-{index}", turns))
    return dialogues


def test_tracker_learns_a_planted_yes_no_slot_carries_state_and_persists(tmp_path):
    train, test = planted_dialogues(60, seed=1), planted_dialogues(20, seed=2)
    model = DialogueStateTracker(ontology=ONTOLOGY, random_state=0).fit(train, targets(train))
    predicted = model.predict(test)
    assert predicted == [[sorted(turn.state) for turn in dialogue.user_turns] for dialogue in test]
    assert slot_dict(predicted[0][2]) == slot_dict(predicted[0][1])  # small talk keeps the state
    train_file = tmp_path / "train.json"
    train_file.write_text("[]", encoding="utf-8")
    save_model(tmp_path / "wos.joblib", model, "wos", "rules-lr", [train_file], versions())
    loaded, _ = load_model(tmp_path / "wos.joblib", "wos", versions())
    assert loaded.predict(test) == predicted


def domain_then_dontcare(count: int, seed: int) -> list[WosDialogue]:
    """A user asks for a restaurant or a hotel, then answers the region question with '상관없어요' alone:
    which slot is dontcare only the earlier user turn tells."""
    rng = random.Random(seed)
    dialogues = []
    for index in range(count):
        domain, asked = rng.choice([("식당", "식당을 찾고 있어요."), ("숙소", "숙소를 찾고 있어요.")])
        state = [f"{domain}-지역-dontcare"]
        turns = [WosTurn("user", asked, []), WosTurn("sys", "지역은 어디로 할까요?"),
                 WosTurn("user", "상관없어요.", state)]
        dialogues.append(WosDialogue(f"d{seed}-{index}", turns))
    return dialogues


def test_gate_tokens_grow_with_the_context():
    turns = [{"tokens": {"turn": ["U:a"], "previous": ["P:b"], "history": ["H:b", "H:c"]}}]
    assert [gate_tokens(turns, context)[0] for context in CONTEXTS] == [
        ["U:a"], ["U:a", "P:b"], ["U:a", "P:b", "H:b", "H:c"]]


def test_the_earlier_user_turn_tells_which_domain_a_bare_dontcare_is_for():
    ontology = {"식당-지역": ["none", "dontcare", "서울 동쪽"], "숙소-지역": ["none", "dontcare", "서울 동쪽"]}
    train, test = domain_then_dontcare(60, seed=3), domain_then_dontcare(20, seed=4)
    expected = [[sorted(turn.state) for turn in dialogue.user_turns] for dialogue in test]
    blind = DialogueStateTracker(ontology=ontology, context="turn", none_threshold=0.5).fit(train, targets(train))
    seeing = DialogueStateTracker(ontology=ontology, context="previous", none_threshold=0.5).fit(train, targets(train))
    assert seeing.predict(test) == expected
    assert blind.predict(test) != expected
    chosen = DialogueStateTracker(ontology=ontology, context=None, none_threshold=0.5).fit(train, targets(train))
    assert chosen.context_ in ("previous", "history") and chosen.threshold_ == 0.5


@pytest.mark.parametrize("written, expected", [
    ("주차 가능한 숙소를 찾아요", {"주차 가능": ("yes", "숙소")}),
    ("비흡연 호텔 찾아주세요", {"흡연 가능": ("no", "숙소")}),
    ("조식은 제공되지 않는 곳으로 갈게요", {"조식 가능": ("no", None)}),
    ("흡연석 있는 주점으로 부탁드릴게요", {"흡연 가능": ("yes", "식당")}),
    ("헬스장이랑 스파 있는 호텔로요", {"헬스장 유무": ("yes", "숙소"), "스파 유무": ("yes", "숙소")}),
    ("아 주차장은 꼭 있어야 돼요.", {"주차 가능": ("yes", None)}),
    ("거기 주차 되나요?", {}),  # asks about a place already named
    ("술을 파는지 알려주세요", {}),  # asks, names nothing searched for
    ("주차는 상관없어요. 식당 찾아요", {}),  # dontcare is the gates' to say
])
def test_stated_conditions(written, expected):
    assert stated_conditions(written) == expected


def test_stated_conditions_go_to_the_named_domain_else_the_one_the_gates_are_in():
    turns = [{"dialogue": 0, "stated": {"주차 가능": ("yes", None)}},
             {"dialogue": 0, "stated": {"흡연 가능": ("no", None)}},
             {"dialogue": 0, "stated": {"주차 가능": ("yes", "숙소")}},
             {"dialogue": 0, "stated": {"주차 가능": ("yes", "숙소")}},
             {"dialogue": 1, "stated": {"주차 가능": ("yes", None)}}]
    decisions = [{"식당-지역": "value"}, {}, {}, {"숙소-주차 가능": "dontcare"}, {}]
    slots = ["식당-지역", "식당-주차 가능", "식당-흡연 가능", "숙소-주차 가능"]
    assert DialogueStateTracker._with_conditions(turns, decisions, slots) == [
        {"식당-지역": "value", "식당-주차 가능": "yes"},
        {"식당-흡연 가능": "no"},  # the domain carries over from the earlier turn
        {"숙소-주차 가능": "yes"},
        {"숙소-주차 가능": "dontcare"},  # a gate's decision stands
        {}]  # a new dialogue has no domain yet
    assert decisions[0] == {"식당-지역": "value"}  # the gates' decisions are left as they were


CONDITION_ONTOLOGY = {"식당-지역": ["none", "서울 동쪽", "서울 서쪽"], "식당-주차 가능": ["none", "dontcare", "yes", "no"],
                      "숙소-주차 가능": ["none", "dontcare", "yes", "no"]}


def parking_now_and_then(count: int, seed: int, every: int, annotated: bool = True) -> list[WosDialogue]:
    """Restaurant searches by region; every `every`-th one also wishes for parking (in the state only when
    `annotated`)."""
    rng = random.Random(seed)
    dialogues = []
    for index in range(count):
        region, parking = rng.choice(["서울 동쪽", "서울 서쪽"]), index % every == 0
        state = [f"식당-지역-{region}"] + (["식당-주차 가능-yes"] if parking and annotated else [])
        asked = f"{region}에 주차 가능한 식당을 찾아요." if parking else f"{region}에 있는 식당을 찾아요."
        turns = [WosTurn("user", asked, sorted(state)), WosTurn("sys", "알겠습니다."),
                 WosTurn("user", "감사합니다.", sorted(state))]
        dialogues.append(WosDialogue(f"p{seed}-{index}", turns))
    return dialogues


def test_the_condition_rule_finds_what_one_training_example_cannot_teach_and_cv_chooses_it():
    train, test = parking_now_and_then(40, seed=1, every=40), parking_now_and_then(16, seed=2, every=2)
    expected = [[sorted(turn.state) for turn in dialogue.user_turns] for dialogue in test]
    without = DialogueStateTracker(ontology=CONDITION_ONTOLOGY, context="turn", condition_rule=False)
    assert without.fit(train, targets(train)).predict(test) != expected
    chosen = DialogueStateTracker(ontology=CONDITION_ONTOLOGY, context="turn").fit(train, targets(train))
    assert chosen.condition_rule_ is True and chosen.predict(test) == expected


def test_cv_leaves_the_condition_rule_off_where_the_states_never_follow_it():
    train = parking_now_and_then(40, seed=1, every=3, annotated=False)
    chosen = DialogueStateTracker(ontology=CONDITION_ONTOLOGY, context="turn").fit(train, targets(train))
    assert chosen.condition_rule_ is False


def test_a_tracker_saved_before_the_condition_rule_is_refused(tmp_path):
    train = parking_now_and_then(12, seed=1, every=3)
    model = DialogueStateTracker(ontology=CONDITION_ONTOLOGY, context="turn", none_threshold=0.5,
                                 condition_rule=False).fit(train, targets(train))
    del model.condition_rule_
    train_file = tmp_path / "train.json"
    train_file.write_text("[]", encoding="utf-8")
    save_model(tmp_path / "wos.joblib", model, "wos", "rules-lr", [train_file], versions())
    with pytest.raises(ModelFileError, match="without the yes/no condition rule"):
        load_model(tmp_path / "wos.joblib", "wos", versions())
