"""The lecture notes' targets (FedSGD vs FedAvg, Jung's FL lecture): runs (:mod:`.runs`)
and registration (:mod:`.targets`)."""
