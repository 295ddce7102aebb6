"""The embedded stack: Temporal's dev server and the three worker roles as processes."""
