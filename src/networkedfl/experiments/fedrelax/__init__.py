"""The FedRelax paper's targets (Abdurakhmanova et al. 2024): runs (:mod:`.runs`),
registration (:mod:`.targets`) and figure functions (:mod:`.figures`)."""
