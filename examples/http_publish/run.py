"""Publish two pages and read each back: python run.py (with ./dev.sh running).

The CMS answers 201 to both posts; it drops the second (dev.sh starts it with --drop
spring-sale). The act claims done both times; only the read-back decides."""

import landed


def publish(slug: str, title: str, body: str) -> landed.TaskSpec:
    return landed.TaskSpec(
        task_id=f"publish-{slug}",
        owner="my-agent",
        outcome=f"the page {slug} is published on the local CMS",
        act=landed.ActSpec(name="cms.publish", input={"slug": slug, "title": title, "body": body}),
        proof_plan=[
            landed.Contract(
                action=f"publish {slug}",
                probe=landed.HttpProbe(source="cms", url=f"/pages/{slug}"),
                expect=landed.Contains(value=title),
            )
        ],
    )


async def main() -> None:
    client = await landed.Client.connect()
    for task in (
        publish("launch", "We launched", "landed is out."),
        publish("spring-sale", "Spring sale", "20% off until May."),
    ):
        receipt = await client.run(task)
        print(f"{task.task_id}:", "DONE:" if receipt.done else "NOT DONE:", receipt.why)


landed.run_main(main())
