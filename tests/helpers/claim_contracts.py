"""The operator's claim contract the claim tests share: a published post, read back by a count
of posts with the claimant's slug on the site (the claimant chooses the slug, nothing else)."""

from __future__ import annotations

from typing import Any

__all__ = ["CONTRACTS"]

CONTRACTS: dict[str, Any] = {
    "contracts": {
        "posts.published": {
            "params": {"slug": "string"},
            "outcome": "one post {slug} is on the site",
            "proof_plan": [
                {
                    "action": "publish the post",
                    "probe": {
                        "kind": "http",
                        "source": "site",
                        "url": {"template": "/posts/count?slug={slug}"},
                    },
                    "expect": {"type": "count", "value": 1},
                }
            ],
        }
    }
}
