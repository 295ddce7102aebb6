"""The act: send one message (here, a row in the outbox a mail relay would drain). It runs only
after the verifier found consent for the recipient and no do-not-contact entry."""

from typing import Any

import landed


@landed.act("mail.send")
def send(input: dict[str, Any], ctx: landed.ActContext) -> landed.ActReport:
    with ctx.credentials.sql("outbox") as conn:
        conn.execute("insert into sent values (?, ?)", [input["to"], input["body"]])
    return landed.ActReport(claimed_status="done", report=f"sent to {input['to']}")
