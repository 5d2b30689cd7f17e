"""An ordinary faust-streaming app, run unmodified by test_faust.py as a worker process against logwright.

A word count: words arrive keyed by themselves on a two-partition topic; one agent counts them in a
table whose changelog is a compacted topic faust creates itself, and sends each new count to an output
topic. The test reads the changelog and the output back with another client. Everything the app needs
comes from the environment, so that the module is the same as any faust user would write.
"""

from __future__ import annotations

import os

import faust

app = faust.App(
    os.environ["WORDCOUNT_APP_ID"],
    broker=f"kafka://{os.environ['WORDCOUNT_BOOTSTRAP']}",
    datadir=os.environ["WORDCOUNT_DATADIR"],
    store="memory://",
    topic_partitions=2,
    topic_replication_factor=1,
    web_enabled=False,
    producer_acks=-1,
)

words = app.topic(os.environ["WORDCOUNT_INPUT"], key_type=str, value_type=str, key_serializer="raw",
                  value_serializer="raw", partitions=2)
counts_out = app.topic(os.environ["WORDCOUNT_OUTPUT"], key_type=str, value_type=int, partitions=2)
word_counts = app.Table("word_counts", default=int, partitions=2)


@app.agent(words)
async def count_words(stream: faust.StreamT[str]) -> None:
    async for word in stream:
        word_counts[word] += 1
        await counts_out.send(key=word, value=word_counts[word])


if __name__ == "__main__":
    app.main()
