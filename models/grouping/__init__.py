"""Group formation: partitions of a bucket (or a first release) into m-unique groups
of minimum generalization cost, exact (pairs, pricing, MIP, CP-SAT) or bounded."""
