#!/usr/bin/env bash
# Rerun every row of results/ with the commands the README lists, from the project folder, each default
# model with an empty analysis cache (so that its time includes Kiwi analysis). Needs the KLUE copies in
# ../shared/klue; takes about 15 minutes on 2 cores. The cross-fitted DP and WoS runs fit two folds at a time
# (--jobs 2, the same scores); MRC's folds share the question views that one process keeps, so it runs them
# one after another. Check the rows afterwards with `klue-baselines reproduce`. With the peers extra installed,
# the last three lines rerun `bench peers` (about 20 minutes more; each side in its own process).
set -euo pipefail
cd "$(dirname "$0")/.."
KLUE=../shared/klue
COLD=${TMPDIR:-/tmp}/klue-cold-cache
fresh() { rm -rf "$COLD/$1"; echo "--cache-dir $COLD/$1"; }

klue-baselines -q run ynat sts nli re --data-dir $KLUE --model trivial
for task in ynat sts nli re; do
    klue-baselines -q $(fresh $task) run $task --data-dir $KLUE
done
NER_TRAIN=$KLUE/klue-ner-v1.1/klue-ner-v1.1_train.first5000.tsv
klue-baselines -q run ner --data-dir $KLUE --train $NER_TRAIN --model trivial
klue-baselines -q $(fresh ner) run ner --data-dir $KLUE --train $NER_TRAIN
klue-baselines -q $(fresh ner-gazetteer) run ner --data-dir $KLUE --train $NER_TRAIN \
    --param re_train=$KLUE/klue-re-v1.1/klue-re-v1.1_train.json
DP_TRAIN=$KLUE/klue-dp-v1.1/klue-dp-v1.1_train.first1000.tsv
klue-baselines -q run dp --data-dir $KLUE --train $DP_TRAIN --cv 5 --model trivial
klue-baselines -q $(fresh dp) run dp --data-dir $KLUE --train $DP_TRAIN --cv 5 --jobs 2
klue-baselines -q $(fresh dp-kiwi) run dp --pos kiwi --data-dir $KLUE --train $DP_TRAIN --cv 5 --jobs 2
MRC_DEV=$KLUE/klue-mrc-v1.1/klue-mrc-v1.1_dev.partial1350.json
klue-baselines -q run mrc --dev $MRC_DEV --cv 5 --model trivial
klue-baselines -q $(fresh mrc) run mrc --dev $MRC_DEV --cv 5
klue-baselines -q $(fresh mrc) run mrc --dev $MRC_DEV --cv 5 --param abstain=false
klue-baselines -q $(fresh mrc) run mrc --dev $MRC_DEV --cv 5 --param ner_train=$NER_TRAIN
WOS_DEV=$KLUE/wos-v1.1/wos-v1.1_dev.first700.json
klue-baselines -q run wos --dev $WOS_DEV --cv 5 --model trivial
klue-baselines -q $(fresh wos) run wos --dev $WOS_DEV --cv 5 --jobs 2
if python -c "import fasttext, ufal.udpipe" 2>/dev/null; then
    klue-baselines -q bench peers ynat --data-dir $KLUE
    klue-baselines -q bench peers ner --data-dir $KLUE --train $NER_TRAIN
    klue-baselines -q bench peers dp --data-dir $KLUE --train $DP_TRAIN
fi
