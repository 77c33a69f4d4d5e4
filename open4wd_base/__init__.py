"""What the three packages share and nothing else: the coded error family (whose fault a refusal is)
and the lazy re-export of a package's public names. It imports none of them, so ``protocol`` and
``sim_core`` can use it and still never import each other: dependencies point one way, and the two cores
share only what sits below all three (docs/layout.md, "Rules that keep it so")."""
