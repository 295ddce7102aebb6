"""The act: publish a page to the CMS. Its report is the CMS's answer, a claim; landed reads
the page back to decide whether it is there."""

from typing import Any

import landed


@landed.act("cms.publish")
def publish(input: dict[str, Any], ctx: landed.ActContext) -> landed.ActReport:
    with ctx.credentials.http("cms", timeout=10) as cms:  # base URL and bearer token applied
        answer = cms.post("/pages", json=input)
    answer.raise_for_status()
    return landed.ActReport(claimed_status="done", report=f"published {answer.json()['url']}")
