"""Studies built on the engine (problems, algorithms, harness, analysis): each names its own grids,
figures and claims. The engine never imports a study."""
