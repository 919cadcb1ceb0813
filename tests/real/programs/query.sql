-- The large query of tests/real/sqlite3.sh and bench/real: a table of a
-- million rows built in memory, then GROUP BY and ORDER BY queries over it.
create table t(id integer primary key, k integer, v text);
with recursive c(i) as (select 1 union all select i + 1 from c where i < 1000000)
insert into t select i, (i * 7919) % 1000, printf('row-%08d', (i * 104729) % 1000000) from c;
select k, count(*), sum(id), min(v), max(v) from t group by k order by sum(id) desc, k limit 10;
select substr(v, 5, 2) as p, count(*), avg(k) from t where id % 3 = 0 group by p order by p limit 10;
select count(distinct v), max(length(v)), total(k) from t;
select * from t where v > 'row-0099' order by v, id limit 3;
