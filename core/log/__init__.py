"""Topics, partitions and their logs: the catalog, partition placement, offsets, producer sequences."""
