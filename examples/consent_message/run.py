"""Message three people, each only with their consent: python run.py (with ./dev.sh running).

consent.json (the verifier's source crm) gives ann consent, puts bob on the do-not-contact
list and does not name carol: only ann is contacted."""

import landed


def message(to: str) -> landed.TaskSpec:
    name = to.split("@")[0]
    return landed.TaskSpec(
        task_id=f"welcome-{name}",
        owner="my-agent",
        outcome=f"{to} got the welcome message",
        act=landed.ActSpec(name="mail.send", input={"to": to, "body": "Welcome aboard!"}),
        contacts={"kind": "message", "recipient": to, "consent_source": "crm"},
        proof_plan=[
            landed.Contract(
                action=f"message {name}",
                probe=landed.RecordProbe(
                    source="outbox",
                    query="select count(*) from sent where recipient = ?",
                    params=[to],
                ),
                expect=landed.Count(value=1),
            )
        ],
    )


async def main() -> None:
    client = await landed.Client.connect()
    for to in ("ann@example.com", "bob@example.com", "carol@example.com"):
        receipt = await client.run(message(to))
        print(f"{to}:", "DONE:" if receipt.done else "NOT DONE:", receipt.why)


landed.run_main(main())
