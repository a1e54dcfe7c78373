"""Korean text -> what classical models eat: Kiwi morphemes, vectoriser analysers, alignment helpers."""
