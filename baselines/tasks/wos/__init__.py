"""WoS: dialogue state tracking; after each user turn, every domain-slot-value mentioned so far."""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from numbers import Real
from pathlib import Path
from typing import Sequence

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.model_selection import GroupKFold
from sklearn.utils.validation import check_is_fitted
from threadpoolctl import threadpool_limits

from baselines.display import html
from baselines.models.linear import OrderedLogisticRegression
from baselines.metrics import scoring, tallies
from baselines.data.fileio import DataError, guid_of, read_json, require, require_list
from baselines.models.estimators import PLAIN_INPUT, NothingLearnt, TaskModel, plain_row, records_from
from baselines.models.explain import linear_top_features
from baselines.models.params import FOLDS, JOBS, MIN_COUNT, POSITIVE, SEED, Interval, StrOptions
from baselines.metrics.teaching import Comparison, precision_recall_rows
from baselines.runtime.parallel import local_jobs
from baselines.data import grown
from baselines.taskspec import (Reading, Modelling, Scoring, Resources, Presentation, Benchmarks, TFIDF_PARTS,
                                ModelEntry, PredictionError, TaskSpec, align_predictions, copy_marker)
from features.analysis import analyze
from features.normalize import nfc_fields
from features.vectorize import morpheme_tokens, ngrams

ONTOLOGY = "ontology.json"
ROLES = ("user", "sys")


@dataclass
class WosTurn:
    role: str
    text: str
    state: list[str] | None = None  # user turns only: the cumulative 'domain-slot-value' strings


@dataclass
class WosDialogue:
    guid: str
    turns: list[WosTurn]
    domains: list[str] = field(default_factory=list)

    @property
    def user_turns(self) -> list[WosTurn]:
        return [turn for turn in self.turns if turn.role == "user"]


def _state(turn: dict, path: Path, where: str) -> list[str] | None:
    if "state" not in turn:
        return None
    state = require(turn, "state", list, path, where)
    for item in state:
        if not isinstance(item, str) or len(item.split("-", 2)) != 3:
            raise DataError(path, where, f"state item {item!r} is not a 'domain-slot-value' string")
    return state


def load(path: Path) -> list[WosDialogue]:
    """An official WoS JSON file: dialogues of alternating user/sys turns, a state on every user turn
    (states optional for unlabelled input)."""
    return records_from_rows(require_list(read_json(path), path), path)


def records_from_rows(rows: list, path: Path) -> list[WosDialogue]:
    """Dialogues of rows in the official layout, which the Hugging Face klue 'wos' schema keeps (its system
    turns carry an empty 'state', which is ignored)."""
    return [_dialogue(row, require(row, "guid", str, path, guid_of(row, index)), path, guid_of(row, index))
            for index, row in enumerate(rows)]


def _dialogue(row: dict, guid: str, path: Path, where: str) -> WosDialogue:
    """One dialogue of the official layout: 'dialogue' turns with 'role', 'text' and, on user turns, 'state'."""
    turns = []
    for turn_index, turn in enumerate(require(row, "dialogue", list, path, where)):
        turn_where = f"{where}, turn {turn_index}"
        role = require(turn, "role", str, path, turn_where)
        if role not in ROLES:
            raise DataError(path, turn_where, f"role {role!r} should be 'user' or 'sys'")
        turns.append(WosTurn(role, require(turn, "text", str, path, turn_where),
                             _state(turn, path, turn_where) if role == "user" else None))
    return WosDialogue(guid, turns, list(row.get("domains") or []))


def as_records(X: Sequence) -> list[WosDialogue]:
    """WosDialogue records, or plain dicts shaped like a dialogue of the official file (states optional)."""
    return records_from(X, WosDialogue, lambda item, guid, where: _dialogue(plain_row(item, where), guid,
                                                                           PLAIN_INPUT, where))


def in_nfc(records: Sequence[WosDialogue]) -> list[WosDialogue]:
    """The dialogues with their turns' texts in NFC (see features.normalize)."""
    return [replace(record, turns=[nfc_fields(turn, "text") for turn in record.turns]) for record in records]


def plain_inputs(records: Sequence[WosDialogue]) -> list[dict]:
    """Dicts shaped like a dialogue of the official file, without the states."""
    return [{"dialogue": [{"role": turn.role, "text": turn.text} for turn in record.turns]} for record in records]


def headline(records: Sequence[WosDialogue], y: Sequence, predicted: Sequence) -> float:
    """Joint goal accuracy over all user turns."""
    gold = [list(state) for dialogue in y for state in dialogue]
    return scoring.score_wos(gold, [list(state) for dialogue in predicted for state in dialogue]
                             )["joint_goal_accuracy"]


def load_resources(files: dict[str, Path]) -> dict:
    path = files[ONTOLOGY]
    ontology = read_json(path)
    if not isinstance(ontology, dict) or not all(isinstance(v, list) for v in ontology.values()):
        raise DataError(path, None, "expected an object mapping 'domain-slot' to its list of values")
    return {"ontology": ontology}


def targets(records: Sequence[WosDialogue]) -> list[list[list[str]]]:
    """The cumulative state after each user turn; None where a turn has none (unlabelled input)."""
    return [[turn.state for turn in record.user_turns] for record in records]


def predict(model, records: Sequence[WosDialogue]) -> list[dict]:
    return [{"guid": record.guid, "states": [sorted(state) for state in states]}
            for record, states in zip(records, model.predict(records))]


def slot_of(item: str) -> str:
    """The 'domain-slot' of a 'domain-slot-value' state item."""
    return "-".join(item.split("-", 2)[:2])


def check_resource_labels(records: Sequence[WosDialogue], resources: dict, path: Path) -> None:
    """Every slot of the gold states is one of the ontology's. Values outside it are real data (the dialogues
    name places the ontology lacks); slot names outside it are not."""
    slots = set(resources.get("ontology") or {})
    if not slots:
        return
    for record, states in zip(records, targets(records)):
        for turn, state in enumerate(states, start=1):
            unknown = sorted({slot_of(item) for item in state} - slots)
            if unknown:
                raise DataError(path, f"guid {record.guid}", f"user turn {turn} has slot {unknown[0]!r}, which "
                                                             f"is not in {ONTOLOGY} ({len(slots)} slots)")


def scored_states(records: Sequence[WosDialogue], predictions: Sequence[dict],
                  resources: dict) -> tuple[list[list], list[list]]:
    """Gold and predicted states of the user turns, per dialogue in record order, the predictions checked."""
    aligned = align_predictions(records, predictions)
    slots = set(resources["ontology"])
    gold, pred = [], []
    for record, prediction, gold_states in zip(records, aligned, targets(records)):
        states = prediction.get("states")
        if not isinstance(states, list) or len(states) != len(gold_states):
            raise PredictionError(f"prediction {record.guid} needs 'states' with one list per user turn "
                                  f"({len(gold_states)})")
        for state in states:
            unknown = [item for item in state if not isinstance(item, str) or slot_of(item) not in slots]
            if unknown:
                raise PredictionError(f"prediction {record.guid} has slots outside the ontology: {unknown[:3]}")
        gold.append(gold_states)
        pred.append(states)
    return gold, pred


def score(records: Sequence[WosDialogue], predictions: Sequence[dict], resources: dict) -> dict[str, float]:
    gold, pred = scored_states(records, predictions, resources)
    return scoring.score_wos([state for dialogue in gold for state in dialogue],
                             [state for dialogue in pred for state in dialogue])


def tally(records: Sequence[WosDialogue], predictions: Sequence[dict], resources: dict) -> tallies.Tally:
    return tallies.tally_wos(*scored_states(records, predictions, resources))


class EmptyStateTracker(NothingLearnt, BaseEstimator):
    """The trivial floor: no slot is ever set."""

    _to_records = staticmethod(as_records)
    _headline = staticmethod(headline)

    def predict(self, X: Sequence) -> list[list[list[str]]]:
        """An empty state after every user turn.

        Parameters
        ----------
        X : sequence of WosDialogue or dict

        Returns
        -------
        list of list of list of str
            For each dialogue, one empty list per user turn.
        """
        return [[[] for _ in record.user_turns] for record in self._fitted_records(X)]



# ---------------------------------------------------------------------------------------------------------
# Values in what people write: ontology values (spacing ignored), times, head counts, stay lengths.

_KOREAN_NUMBERS = {"한": 1, "두": 2, "세": 3, "네": 4, "다섯": 5, "여섯": 6, "일곱": 7, "여덟": 8, "아홉": 9, "열": 10}
_DAY_COUNTS = {"하루": 1, "이틀": 2, "사흘": 3, "나흘": 4, "닷새": 5, "엿새": 6}
_TIME = re.compile(r"(오전|오후|저녁|밤|아침|낮|새벽)?\s*(\d{1,2})\s*시\s*(?:(\d{1,2})\s*분|(반))?|(\d{1,2}):(\d{2})")
_HEADS = re.compile(r"(\d+|" + "|".join(sorted(_KOREAN_NUMBERS, key=len, reverse=True)) + r")\s*(?:명|사람|인)")
_NIGHTS = re.compile(r"(\d+|" + "|".join(_DAY_COUNTS) + r")\s*(?:박|일(?![0-9])|밤)|("
                     + "|".join(_DAY_COUNTS) + ")")
# Ways of writing an ontology value that string matching would miss.
_SYNONYMS = {"비싸": "비싼", "에어비앤비": "에어비엔비", "북쪽": "서울 북쪽", "남쪽": "서울 남쪽", "동쪽": "서울 동쪽",
             "서쪽": "서울 서쪽"}  # the dialogues are all in Seoul: '북쪽에 위치한' is 서울 북쪽
# Slots whose value is a place: which of two places is which depends on the particle after it.
_ORIGIN_SLOTS = ("택시-출발지", "지하철-출발지")
_DESTINATION_SLOTS = ("택시-도착지", "지하철-도착지")
_ORIGIN_PARTICLE = re.compile(r"\s*(에서|부터)")
_DESTINATION_PARTICLE = re.compile(r"\s*(까지|으로|로|에)")


def normalize_time(text: str) -> list[str]:
    """Every time in the text as HH:MM: '23시20분' -> '23:20', '오후 3시' -> '15:00', '7시 반' -> '07:30'."""
    times = []
    for match in _TIME.finditer(text):
        if match.group(5):
            hour, minute = int(match.group(5)), int(match.group(6))
        else:
            hour = int(match.group(2))
            minute = 30 if match.group(4) else int(match.group(3) or 0)
            if match.group(1) in ("오후", "저녁", "밤") and hour < 12:
                hour += 12
        if hour <= 24 and minute < 60:
            times.append(f"{hour:02d}:{minute:02d}")
    return times


def normalize_count(text: str) -> list[str]:
    """Head counts: '두명' -> '2', '2명' -> '2', '열 사람' -> '10', '혼자' -> '1'."""
    alone = ["1"] if "혼자" in text else []
    return alone + [str(_KOREAN_NUMBERS.get(m.group(1), m.group(1))).lstrip("0") or "0" for m in _HEADS.finditer(text)]


def normalize_nights(text: str) -> list[str]:
    """Lengths of a stay: '2박' -> '2', '이틀간' -> '2', '3일동안' -> '3', '하루' -> '1'."""
    values = []
    for match in _NIGHTS.finditer(text):
        word = match.group(1) or match.group(2)
        values.append(str(_DAY_COUNTS.get(word, word)))
    return values


class ValueFinder:
    """Finds the values of every slot in a text: ontology values by a longest-first scan that ignores
    spacing ('명동쇼핑거리' finds '명동 쇼핑 거리'), plus the normalised times, counts and stay lengths."""

    def __init__(self, ontology: dict[str, list[str]]):
        self.slots = sorted(ontology)
        slots_of: dict[str, list[str]] = defaultdict(list)
        for slot, values in ontology.items():
            for value in values:
                if value not in ("none", "dontcare", "yes", "no") and not value.isdigit() and ":" not in value:
                    slots_of[value].append(slot)
        self.slots_of = dict(slots_of)
        spellings = {"".join(value.split()): value for value in self.slots_of}
        spellings.update({key: value for key, value in _SYNONYMS.items() if value in self.slots_of})
        self.value_of = spellings
        self._compile()

    def _compile(self) -> None:
        keys = sorted(self.value_of, key=len, reverse=True)
        self.pattern = re.compile("|".join(map(re.escape, keys))) if keys else None

    # A saved model keeps plain data only (a compiled pattern is not data that skops can store); the pattern
    # is compiled again on load.
    def __getstate__(self) -> dict:
        return {key: value for key, value in self.__dict__.items() if key != "pattern"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._compile()

    def find(self, text: str) -> dict[str, list[str]]:
        """slot -> values found, in text order."""
        found: dict[str, list[str]] = defaultdict(list)
        if self.pattern is not None:
            positions = [i for i, char in enumerate(text) if not char.isspace()]
            squeezed = "".join(text[i] for i in positions)
            for match in self.pattern.finditer(squeezed):
                value = self.value_of[match.group()]
                after = text[positions[match.end() - 1] + 1:]
                for slot in self.slots_of[value]:
                    if slot in _ORIGIN_SLOTS and _DESTINATION_PARTICLE.match(after) and \
                            not _ORIGIN_PARTICLE.match(after):
                        continue
                    if slot in _DESTINATION_SLOTS and _ORIGIN_PARTICLE.match(after):
                        continue
                    found[slot].append(value)
        for slot in self.slots:
            if slot.endswith("시간"):
                found[slot].extend(normalize_time(text))
            elif slot.endswith("명수"):
                found[slot].extend(normalize_count(text))
            elif slot.endswith("기간"):
                found[slot].extend(normalize_nights(text))
        return {slot: values for slot, values in found.items() if values}


NONE, DONTCARE, VALUE = "none", "dontcare", "value"

# References to what another part of the dialogue already fixed: '같은 날', '숙소에서 식당까지'.
_SAME = {"요일": re.compile(r"같은\s*(날|요일)"), "지역": re.compile(r"같은\s*(지역|곳|동네)|근처"),
         "명수": re.compile(r"같은\s*(인원|명수|수)")}
_DOMAIN_WORDS = {"숙소": ("숙소", "호텔", "모텔", "호스텔", "게스트"), "식당": ("식당", "음식점", "맛집"),
                 "관광": ("관광지", "관광")}


def referenced_value(slot: str, text: str, state: dict[str, str]) -> str | None:
    """A value the text refers to instead of saying it: the same day/area/party size as another domain,
    the hotel or restaurant a taxi goes from or to, the restaurant's booking time for a taxi's arrival."""
    domain, name = slot.split("-", 1)
    kind = name.split()[-1]  # '예약 요일' -> '요일'
    if kind in _SAME and _SAME[kind].search(text):
        for other, value in state.items():
            if other.split()[-1].endswith(kind) and not other.startswith(domain) and value != DONTCARE:
                return value
    if domain == "택시" and name in ("출발지", "도착지"):
        particle = "에서" if name == "출발지" else "(까지|로|으로)"
        for other_domain, words in _DOMAIN_WORDS.items():
            if any(re.search(re.escape(word) + r"\s*" + particle, text) for word in words):
                if f"{other_domain}-이름" in state:
                    return state[f"{other_domain}-이름"]
    if slot == "택시-도착 시간" and re.search(r"예약\s*시간", text):
        return state.get("식당-예약 시간")
    return None


# Yes/no conditions that a user states in passing ('주차 가능한 숙소', '흡연석 있는 곳'): the gates see a few dozen
# of each in a few hundred dialogues and answer 'none' to most; a cue per condition (the slot's own words and
# their common synonyms) finds them. Keyed by the slot's name without its domain.
_CONDITION_CUES = {
    "주차 가능": r"주차", "인터넷 가능": r"인터넷|와이\s*파이|wi-?fi", "헬스장 유무": r"헬스|피트니스|운동\s*시설",
    "스파 유무": r"스파|사우나|목욕", "수영장 유무": r"수영", "조식 가능": r"조식|아침\s*(밥|식사)|아침을?\s*(주|제공)",
    "흡연 가능": r"흡연|담배|금연", "도보 가능": r"도보|걸어|걸을|걷", "경치 좋은": r"경치|전망|풍경|야경|뷰가",
    "교육적": r"교육", "문화 예술": r"문화|예술", "역사적": r"역사",
    "주류 판매": r"주류|술\s*(을|도|이)?\s*(팔|파는|판매|마시|마실|먹|되|가능)", "야외석 유무": r"야외|테라스",
}
_CONDITION_PATTERNS = {name: re.compile(cue, re.IGNORECASE) for name, cue in _CONDITION_CUES.items()}
# A condition counts when the clause after it names what is searched for or wishes for it ('... 곳으로',
# '꼭 있어야'); a question about a place already named ('거기 주차 되나요?') asks, it does not constrain.
_SEARCHED = re.compile(r"[^.!?]{0,30}?(곳|데|숙소|호텔|모텔|에어비|게스트|호스텔|식당|음식점|주점|카페|관광지|장소|레스토랑|"
                       r"맛집|한식당|중식당|일식당|양식당|베이커리|좋겠|꼭|있어야|해야|원해|원합|필요|했으면|하면 좋|부탁|찾아|"
                       r"찾고|찾는|선호)")
_POINTING = re.compile(r"(거기|그곳|그 곳|여기|이곳|그 호텔|그 숙소|그 식당)[^.!?]*$")
_NEGATED = re.compile(r"[^.,?!]{0,12}?(않|안\s*(되|돼|나오|하|피|주|파|팔)|없는|없었|없으|없이|못|말고|빼고)")
_INDIFFERENT = re.compile(r"[^.,?!]{0,10}?(상관\s*없|상관\s*안|무관)")  # dontcare is the gates' to say
# Words that tell which domain a condition is for, nearest after it first.
_DOMAIN_CUES = {"숙소": re.compile(r"숙소|호텔|모텔|에어비|게스트|호스텔|묵을|머물|잘\s*곳|방을?"),
                "식당": re.compile(r"식당|음식점|주점|카페|레스토랑|맛집|한식|중식|일식|양식|베이커리|술집|밥집|먹을"),
                "관광": re.compile(r"관광|명소|갈\s*곳|가볼|볼\s*곳|공원|박물관|랜드마크|놀\s*곳|구경")}


def stated_conditions(text: str) -> dict[str, tuple[str, str | None]]:
    """The yes/no conditions the text asks for: slot name (without domain) -> ('yes' or 'no', the domain the
    text names for it, or None). '주차 가능한 숙소' -> {'주차 가능': ('yes', '숙소')}; '비흡연 호텔' -> no."""
    stated = {}
    for name, pattern in _CONDITION_PATTERNS.items():
        for match in pattern.finditer(text):
            before, after = text[:match.start()], text[match.end():]
            if _INDIFFERENT.match(after) or not _SEARCHED.match(after) or _POINTING.search(before):
                continue
            negated = bool(_NEGATED.match(after)) or (name == "흡연 가능" and (match.group() == "금연"
                                                                             or before.endswith("비")))
            stated[name] = ("no" if negated else "yes", _named_domain(text, after))
    return stated


def _named_domain(text: str, after: str) -> str | None:
    """The domain named nearest after a condition (within its clause's reach), else the first named in the
    text, else None."""
    nearest = [(match.start(), domain) for domain, pattern in _DOMAIN_CUES.items()
               if (match := pattern.search(after[:30]))]
    if nearest:
        return min(nearest)[1]
    anywhere = [(match.start(), domain) for domain, pattern in _DOMAIN_CUES.items() if (match := pattern.search(text))]
    return min(anywhere)[1] if anywhere else None


def slot_dict(state: Sequence[str]) -> dict[str, str]:
    """['식당-지역-서울 동쪽', ...] -> {'식당-지역': '서울 동쪽', ...} (values may hold '-', slots do not)."""
    pairs = (item.split("-", 2) for item in state)
    return {f"{domain}-{slot}": value for domain, slot, value in pairs}


def turn_updates(previous: dict[str, str], current: dict[str, str]) -> dict[str, str]:
    """The slots a user turn set or changed, with their new values."""
    return {slot: value for slot, value in current.items() if previous.get(slot) != value}


def gate_label(value: str | None) -> str:
    """What a slot's gate classifier predicts: none, dontcare, yes, no, or value (a string to find)."""
    if value is None:
        return NONE
    return value if value in (DONTCARE, "yes", "no") else VALUE


CONTEXTS = ("turn", "previous", "history")  # what a gate sees of the earlier user turns, least first


def gate_tokens(turns: list[dict], context: str) -> list[list[str]]:
    """Each turn's gate tokens with the given context (see DialogueStateTracker)."""
    parts = CONTEXTS[:CONTEXTS.index(context) + 1]
    return [[token for part in parts for token in turn["tokens"][part]] for turn in turns]


class DialogueStateTracker(TaskModel, BaseEstimator):
    """Per user turn, a gate per slot (logistic regression on morpheme n-grams of the turn, the system
    turn before it, which slots the rules found values for, and with ``context`` the user's earlier turns)
    says whether the slot is set and to dontcare/yes/no/a value; a value comes from the rules (the turn,
    then the system turn, then references to other domains). With ``condition_rule``, a yes/no condition the
    turn states (a cue word such as 주차 before what is searched for) sets its slot where no gate did. The
    state carries over; a later value replaces an earlier one.

    A gate answers 'none' only when that has at least ``none_threshold`` probability: the gates see far
    more 'none' than anything else, so a plain argmax misses most updates. What is left None of
    ``none_threshold`` (among THRESHOLDS), ``context`` (among CONTEXTS) and ``condition_rule`` is chosen by
    joint goal accuracy in a cross-validation over the training dialogues.

    Parameters
    ----------
    ontology : dict or None
        'domain-slot' -> values (the official ontology.json); values seen in the training states are added.
    C : float
        Inverse L2 strength of the gates. 64 and context 'history', the best by 3-fold CV over the dialogues
        (results/tuning/wos-rules-lr-context-c.json).
    none_threshold : float in (0, 1) or None
        See above; None chooses it by cross-validation.
    context : 'turn', 'previous', 'history' or None
        What a gate sees of the user's earlier turns: nothing ('turn'), the content morphemes of the
        previous user turn ('previous'), or those and the content morphemes of every earlier user turn
        ('history': which domain the talk is about, when a turn says only '상관없어요'). None chooses it
        by the cross-validation that chooses none_threshold.
    condition_rule : bool or None
        Whether the yes/no conditions a turn states in so many words ('주차 가능한 숙소', '비흡연 호텔') set
        their slot where no gate does (see stated_conditions): the gates see too few of each to learn them.
        None chooses it by the cross-validation that chooses none_threshold.
    selection_folds : int
        Folds over the training dialogues for choosing none_threshold and context.
    min_df : int
        A turn n-gram must occur in this many training turns.
    n_jobs : int
        Processes that fit the slot gates.
    random_state : int

    Attributes
    ----------
    finder_ : ValueFinder
        The rules that find values in a text.
    slots_ : list of str
    threshold_ : float
        The none_threshold in use.
    context_ : str
        The context in use.
    condition_rule_ : bool
        Whether the condition rule is in use.
    vectorizer_ : TfidfVectorizer
    gates_ : dict
        slot -> its fitted gate (or the one label it always had in training).

    X is a sequence of WosDialogue records or of dicts shaped like a dialogue of the official file; y holds
    the cumulative state after each user turn.
    """

    _to_records = staticmethod(as_records)
    _in_nfc = staticmethod(in_nfc)
    _headline = staticmethod(headline)

    _parameter_constraints = {
        "ontology": [dict, None], "C": [POSITIVE], "none_threshold": [Interval(Real, 0, 1, closed="neither"), None],
        "context": [StrOptions(set(CONTEXTS)), None], "condition_rule": ["boolean", None],
        "selection_folds": [FOLDS], "min_df": [MIN_COUNT],
        "n_jobs": [JOBS, None], "random_state": [SEED],
    }

    THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.9)

    def __init__(self, *, ontology: dict | None = None, C: float = 64.0, none_threshold: float | None = None,
                 context: str | None = "history", condition_rule: bool | None = None, selection_folds: int = 2,
                 min_df: int = 2, n_jobs: int | None = 2, random_state: int = 0):
        self.ontology = ontology
        self.C = C
        self.none_threshold = none_threshold
        self.context = context
        self.condition_rule = condition_rule
        self.selection_folds = selection_folds
        self.min_df = min_df
        self.n_jobs = n_jobs
        self.random_state = random_state

    def _documents(self, records: Sequence[WosDialogue]) -> list[dict]:
        """One entry per user turn, in order: the dialogue index, the texts, the values the rules find in
        the turn and in the system turn before it, and the gate's tokens: of the turn itself, of the previous
        user turn ('P:'), and of all earlier user turns ('H:')."""
        texts = [turn.text for record in records for turn in record.turns]
        analyses = iter(analyze(texts))
        turns = []
        for index, record in enumerate(records):
            system, system_analysis, previous, history = None, None, [], set()
            for turn in record.turns:
                analysis = next(analyses)
                if turn.role == "sys":
                    system, system_analysis = turn, analysis
                    continue
                found_user = self.finder_.find(turn.text)
                found_system = self.finder_.find(system.text) if system else {}
                tokens = ["U:" + gram for gram in ngrams(morpheme_tokens(analysis), (1, 2))]
                if system_analysis is not None:
                    tokens += ["S:" + token for token in morpheme_tokens(system_analysis)]
                tokens += [f"F:{slot}" for slot in found_user] + [f"FS:{slot}" for slot in found_system]
                content = morpheme_tokens(analysis, content_only=True)
                turns.append({"dialogue": index, "text": turn.text, "user": found_user, "system": found_system,
                              "stated": stated_conditions(turn.text),
                              "tokens": {"turn": tokens, "previous": ["P:" + token for token in previous],
                                         "history": ["H:" + token for token in sorted(history)]}})
                previous, history = content, history | set(content)
        return turns

    def layout_mismatch(self) -> str | None:
        """What keeps this fitted tracker from tracking with this version (one saved before the condition
        rule); None when it can."""
        if hasattr(self, "gates_") and not hasattr(self, "condition_rule_"):
            return "this WoS tracker was saved by a version without the yes/no condition rule"
        return None

    def _fit_gates(self, documents: list[list[str]], labels: dict[str, list[str]]) -> tuple:
        vectorizer = TfidfVectorizer(analyzer=_identity, min_df=self.min_df, sublinear_tf=True)
        features = vectorizer.fit_transform(documents)
        gates = {slot: slot_labels[0] for slot, slot_labels in labels.items() if len(set(slot_labels)) == 1}
        trained = [slot for slot in labels if slot not in gates]
        # 45 independent fits: threads share the feature matrix, and L-BFGS spends its time in numpy. Each
        # thread's BLAS runs on one core: a BLAS pool per thread on top of the fits' own threads spins for
        # cores that are taken (the 700-dialogue cross-fit took 89 s that way and 30 s this way).
        with threadpool_limits(limits=1, user_api="blas"):
            fitted = Parallel(n_jobs=local_jobs(self.n_jobs), prefer="threads")(
                delayed(OrderedLogisticRegression(C=self.C, max_iter=1000).fit)(
                    features, labels[slot]) for slot in trained)
        gates.update(zip(trained, fitted))
        return vectorizer, gates

    def fit(self, X: Sequence, y: Sequence[Sequence[Sequence[str]]]) -> "DialogueStateTracker":
        """Learn the slot gates and value choices from the dialogues' gold states.

        Parameters
        ----------
        X : sequence of WosDialogue or dict
            Training dialogues, as records or raw rows of the official file (dialogue, domains).
        y : sequence of sequence of sequence of str
            For each dialogue, the cumulative state after each user turn, as 'domain-slot-value' strings.

        Returns
        -------
        self : DialogueStateTracker
            The fitted model.
        """
        records = self._fit_records(X)
        # The official ontology misses values that the dialogues use (hotel names of dev, for one): add
        # every value seen in the training states.
        ontology = self._ontology_from(y, self.ontology or {})
        self.finder_ = ValueFinder(ontology)
        self.slots_ = sorted(ontology)
        turns = self._documents(records)
        states = [slot_dict(state) for dialogue in y for state in dialogue]
        labels = {slot: [] for slot in self.slots_}
        for number, turn in enumerate(turns):
            first = number == 0 or turns[number - 1]["dialogue"] != turn["dialogue"]
            updates = turn_updates({} if first else states[number - 1], states[number])
            for slot in self.slots_:
                labels[slot].append(gate_label(updates.get(slot)))
        self.context_, self.threshold_, self.condition_rule_ = self._select_settings(turns, states, labels)
        self.vectorizer_, self.gates_ = self._fit_gates(gate_tokens(turns, self.context_), labels)
        return self

    def _select_settings(self, turns: list[dict], states: list[dict],
                         labels: dict[str, list[str]]) -> tuple[str, float, bool]:
        """The context, none threshold and condition rule (those not given) with the best joint goal accuracy
        on held-out training dialogues; among ties, the first in CONTEXTS, THRESHOLDS and (off, on) order."""
        contexts = CONTEXTS if self.context is None else (self.context,)
        thresholds = self.THRESHOLDS if self.none_threshold is None else (self.none_threshold,)
        rules = (False, True) if self.condition_rule is None else (self.condition_rule,)
        if len(contexts) == len(thresholds) == len(rules) == 1:
            return contexts[0], float(thresholds[0]), rules[0]
        dialogues = np.array([turn["dialogue"] for turn in turns])
        folds = list(GroupKFold(n_splits=min(self.selection_folds, len(set(dialogues)))).split(turns,
                                                                                               groups=dialogues))
        correct = np.zeros((len(contexts), len(thresholds), len(rules)))
        for row, context in enumerate(contexts):
            documents = gate_tokens(turns, context)
            for inner_train, inner_test in folds:
                vectorizer, gates = self._fit_gates([documents[i] for i in inner_train],
                                                    {slot: [values[i] for i in inner_train]
                                                     for slot, values in labels.items()})
                held_out = [turns[i] for i in inner_test]
                probabilities = self._gate_probabilities(vectorizer, gates, [documents[i] for i in inner_test])
                for column, threshold in enumerate(thresholds):
                    decisions = self._decisions(gates, probabilities, threshold, len(held_out))
                    for layer, rule in enumerate(rules):
                        predicted = self._decode(held_out, self._with_conditions(held_out, decisions, self.slots_)
                                                 if rule else decisions)
                        correct[row, column, layer] += sum(slot_dict(p) == states[i]
                                                           for p, i in zip(predicted, inner_test))
        row, column, layer = np.unravel_index(int(np.argmax(correct)), correct.shape)
        return contexts[row], float(thresholds[column]), rules[layer]

    @staticmethod
    def _ontology_from(y, known: dict[str, list[str]]) -> dict[str, list[str]]:
        ontology: dict[str, set[str]] = defaultdict(set, {slot: set(values) for slot, values in known.items()})
        for dialogue in y:
            for state in dialogue:
                for slot, value in slot_dict(state).items():
                    ontology[slot].add(value)
        return {slot: sorted(values) for slot, values in ontology.items()}

    @staticmethod
    def _gate_probabilities(vectorizer, gates: dict, documents: list[list[str]]) -> dict:
        """slot -> (classes, probabilities of every turn), all turns' gate tokens at once."""
        features = vectorizer.transform(documents)
        return {slot: (list(gate.classes_), gate.predict_proba(features)) for slot, gate in gates.items()
                if not isinstance(gate, str)}

    @staticmethod
    def _decisions(gates: dict, probabilities: dict, threshold: float, size: int) -> list[dict[str, str]]:
        """For each of `size` turns, the slots whose gate is not 'none' and what it says."""
        decisions: list[dict[str, str]] = [{} for _ in range(size)]
        for slot, gate in gates.items():
            if isinstance(gate, str):
                if gate != NONE:
                    for decision in decisions:
                        decision[slot] = gate
                continue
            classes, matrix = probabilities[slot]
            none = matrix[:, classes.index(NONE)] if NONE in classes else np.zeros(len(matrix))
            others = [i for i, label in enumerate(classes) if label != NONE]
            best = np.array(classes, dtype=object)[others][matrix[:, others].argmax(axis=1)]
            for number in np.flatnonzero(none < threshold):
                decisions[number][slot] = best[number]
        return decisions

    @staticmethod
    def _with_conditions(turns: list[dict], decisions: list[dict[str, str]],
                         slots: Sequence[str]) -> list[dict[str, str]]:
        """The gates' decisions with the yes/no conditions each turn states (stated_conditions) added where
        no gate decided that condition in any domain. The domain is the one the turn names; else the one
        most of the turn's gate decisions are in; else the last one decided earlier in the dialogue."""
        known = set(slots)
        extended, domain = [], None
        for number, (turn, decision) in enumerate(zip(turns, decisions)):
            if number == 0 or turns[number - 1]["dialogue"] != turn["dialogue"]:
                domain = None
            decided = Counter(slot.split("-", 1)[0] for slot in decision)
            domain = decided.most_common(1)[0][0] if decided else domain
            decision = dict(decision)
            for name, (value, named) in turn["stated"].items():
                slot = f"{named or domain}-{name}"
                if slot in known and not any(other.endswith(f"-{name}") for other in decision):
                    decision[slot] = value
            extended.append(decision)
        return extended

    @staticmethod
    def _decode(turns: list[dict], decisions: list[dict[str, str]]) -> list[list[str]]:
        """The state after every turn: the previous state updated by the gates' decisions, with values
        from the rules."""
        states, state = [], {}
        for number, (turn, decision) in enumerate(zip(turns, decisions)):
            if number == 0 or turns[number - 1]["dialogue"] != turn["dialogue"]:
                state = {}
            updates = {}
            for slot, verdict in decision.items():
                if verdict != VALUE:
                    updates[slot] = verdict
                    continue
                value = (turn["user"].get(slot) or turn["system"].get(slot) or [None])[-1] \
                    or referenced_value(slot, turn["text"], state)
                if value is not None:
                    updates[slot] = value
            state = {**state, **updates}
            states.append(sorted(f"{slot}-{value}" for slot, value in state.items()))
        return states

    def top_features(self, top_k: int = 10) -> dict[str, list[tuple[str, float]]]:
        """Per slot and gate decision (value, dontcare, yes, no), the turn's features that speak most for
        it; slots whose gate never changed in training have none."""
        check_is_fitted(self)
        names = self.vectorizer_.get_feature_names_out()
        sections = {}
        for slot in self.slots_:
            gate = self.gates_[slot]
            if isinstance(gate, str):
                continue
            sections.update({section: weights for section, weights in
                             linear_top_features(names, gate, top_k, prefix=f"{slot}: ").items()
                             if not section.endswith(f": {NONE}")})
        return sections

    def predict(self, X: Sequence) -> list[list[list[str]]]:
        """The cumulative state after each user turn of each dialogue.

        Parameters
        ----------
        X : sequence of WosDialogue or dict

        Returns
        -------
        list of list of list of str
            For each dialogue, one list of 'domain-slot-value' strings per user turn.
        """
        records = self._fitted_records(X)
        turns = self._documents(records)
        predictions: list[list[list[str]]] = [[] for _ in records]
        if not turns:
            return predictions
        probabilities = self._gate_probabilities(self.vectorizer_, self.gates_, gate_tokens(turns, self.context_))
        decisions = self._decisions(self.gates_, probabilities, self.threshold_, len(turns))
        if self.condition_rule_:
            decisions = self._with_conditions(turns, decisions, self.slots_)
        for turn, state in zip(turns, self._decode(turns, decisions)):
            predictions[turn["dialogue"]].append(state)
        return predictions


def _identity(tokens: list[str]) -> list[str]:
    return tokens




def compare(records: Sequence[WosDialogue], aligned: Sequence[dict]) -> Comparison:
    """States are sets of slot values, so there are no classes: the groups are the slots, each with the
    precision, recall and F1 of its values over the user turns. A dialogue is as wrong as its share of user
    turns with a wrong state; its first wrong turn is shown."""
    comparison = Comparison("dialogue", group_by="slot", ranked_by="the share of user turns with a wrong state")
    slot_counts: dict[str, Counter] = defaultdict(Counter)
    for gold_states, prediction in zip(targets(records), aligned):
        for gold, pred in zip(gold_states, prediction["states"]):
            count_slot_values(slot_counts, gold, pred)
        wrong = [turn for turn, (gold, pred) in enumerate(zip(gold_states, prediction["states"]))
                 if set(gold) != set(pred)]
        comparison.wrong.append(len(wrong) / len(gold_states) if gold_states else 0.0)
        if wrong:
            gold, pred = set(gold_states[wrong[0]]), set(prediction["states"][wrong[0]])
            comparison.shown.append((f"turn {wrong[0] + 1}: missed {sorted(gold - pred)}",
                                     f"turn {wrong[0] + 1}: wrongly {sorted(pred - gold)}"))
        else:
            comparison.shown.append(("", ""))
    comparison.groups = precision_recall_rows(slot_counts, "turns")
    return comparison


def count_slot_values(counts: dict[str, Counter], gold: Sequence[str], pred: Sequence[str]) -> None:
    """Add one turn's slot values to {slot: Counter(tp, fp, fn)}: a predicted value is a true positive when
    it is the gold value of its slot, else a false positive; a gold value not predicted is a false negative."""
    gold_values = {scoring.wos_slot(item): item for item in gold}
    predicted_values = {scoring.wos_slot(item): item for item in pred}
    for slot in gold_values.keys() | predicted_values.keys():
        expected, given = gold_values.get(slot), predicted_values.get(slot)
        if given is not None and given == expected:
            counts[slot]["tp"] += 1
            continue
        if given is not None:
            counts[slot]["fp"] += 1
        if expected is not None:
            counts[slot]["fn"] += 1



def distinct_copy(record: WosDialogue, copy: int) -> WosDialogue:
    """Copy `copy` of a dialogue for the scale benchmark: copy_marker(copy) in front of every turn."""
    turns = [replace(turn, text=f"{copy_marker(copy)}. {turn.text}") for turn in record.turns]
    return replace(record, guid=f"{record.guid}-copy{copy}", turns=turns)


TASK = TaskSpec(
    code="wos",
    title="WoS dialogue state tracking",
    folder="wos-v1.1",
    train_file="wos-v1.1_train.json",
    dev_file="wos-v1.1_dev.json",
    reading=Reading(
        texts=lambda records: [turn.text for r in records for turn in r.turns],
        load=load,
        from_hf=records_from_rows,
        as_records=as_records,
        plain_inputs=plain_inputs,
        distinct_copy=distinct_copy,
    ),
    modelling=Modelling(
        targets=targets,
        models={"rules-lr": ModelEntry(DialogueStateTracker, from_resources={"ontology": "ontology"}),
                # What the default's cross-validation chooses, set: the gates are fitted once, not three times.
                "fast": ModelEntry(DialogueStateTracker,
                                   {"none_threshold": 0.8, "context": "history", "condition_rule": True},
                                   from_resources={"ontology": "ontology"}),
                "trivial": ModelEntry(EmptyStateTracker)},
        default_model="rules-lr",
        predict=predict,
        saved_types=(DialogueStateTracker, EmptyStateTracker, ValueFinder, _identity, OrderedLogisticRegression,
                     *TFIDF_PARTS),
    ),
    scoring=Scoring(
        score=score,
        tally=tally,
        breakdown="slot_accuracy",
        headline=("joint_goal_accuracy", "slot_f1"),
        prediction_example='{"guid": "wos-v1_dev_00000", "states": [["관광-이름-명동 쇼핑 거리"], [...], ...]}',
        compare=compare,
    ),
    resources=Resources(
        extra_files=(ONTOLOGY,),
        check_resource_labels=check_resource_labels,
        load_resources=load_resources,
    ),
    presentation=Presentation(drawer=html.draw_wos, page_form="dialogue"),
    benchmarks=Benchmarks(grow=grown.first_user_turn_grown),
)
