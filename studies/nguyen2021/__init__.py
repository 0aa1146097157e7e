"""The study of Nguyen, Dai, Low and Jaillet, "Value-at-Risk Optimization with Gaussian Processes"
(ICML 2021): its published reproduction page (:mod:`studies.nguyen2021.page`)."""
