"""landed's benchmarks: each module measures one figure beside its baseline from the same run."""
