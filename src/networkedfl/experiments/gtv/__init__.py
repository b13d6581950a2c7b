"""The GTV paper's targets (SarcheshmehPour, Tian, Zhang & Jung): linear experiments
(:mod:`.linear`, :mod:`.star`, :mod:`.diagrams`), MNIST (:mod:`.mnist`, its learnt graph
:mod:`.mnist_graph`), the published-vs-paper ablations (:mod:`.ablation`) and their
registration (:mod:`.targets`, :mod:`.mnist_targets`)."""
