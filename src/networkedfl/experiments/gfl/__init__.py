"""The graph-aware FL chapter's targets (Lu, Xing & Yu): synthetic experiments of Secs
10.2-10.4 (:mod:`.synthetic`) and the review corpus of Sec. 10.5.2 (:mod:`.reviews`,
:mod:`.reviews_nlp`), their registration and figure functions (:mod:`.figures`)."""
