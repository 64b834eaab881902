"""The soak run (perf/soak/run.py, docs/faults.md "Soak"): the fault suite's topology and
probes for a long time under pod churn, route churn and daemon restarts; daemon memory and fds
sampled (sampler), growth judged (growth), what the nodes hold compared with the start
(inventory), the churn itself (churn)."""
