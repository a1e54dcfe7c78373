"""Korean text -> what classical models eat: what two or more tasks share, and nothing only one task uses.

analysis (with cache) is Kiwi's analysis for every task; morphemes, tags and characters describe an
analysed text; align maps characters to morphemes and eojeols (NER, RE); vectorize puts analyses into
scikit-learn vectorisers (YNAT, STS, NLI, NER, RE, WoS, MRC); pairs compares two sentences (STS, NLI;
MRC uses its character n-grams). A helper that serves one task lives beside that task's model, under
baselines/tasks/ (DP's spanning tree, MRC's passage matching, NLI's cross tokens).
"""
