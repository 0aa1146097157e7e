"""The field's suite (issues 39 and 40): the risk-averse BO problems of BoRisk (NeurIPS 2020) and the
CV-UCB paper (NeurIPS 2021) against the field's methods, at equal budgets."""
