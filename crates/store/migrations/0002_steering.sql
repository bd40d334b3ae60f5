-- Traffic steering of A and AAAA records, as the JSON of its spec (countries, continents,
-- weight, backup, check); NULL for a plain record.
ALTER TABLE records ADD COLUMN steering TEXT;
