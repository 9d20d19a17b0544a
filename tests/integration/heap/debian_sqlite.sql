-- A large table for it_heap_debian: 300,000 rows with text, an index, a scan.
CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT, c REAL);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 300000)
INSERT INTO t SELECT i, printf('row-%d-%s', i, hex(randomblob(20))), i*1.5 FROM n;
CREATE INDEX tb ON t(b);
SELECT count(*), sum(length(b)) FROM t;
