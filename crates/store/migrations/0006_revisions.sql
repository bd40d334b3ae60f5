-- A zone's revision changes in the same transaction as anything its compiled form is made of,
-- however the change is written, so a saved image of the compiled zone is used only while it
-- is current. A new zone starts at a random revision: a zone that reuses a deleted zone's id
-- does not take up its count.
ALTER TABLE zones ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;
UPDATE zones SET revision = random() & 4611686018427387903;

CREATE TRIGGER zones_created AFTER INSERT ON zones BEGIN
    UPDATE zones SET revision = random() & 4611686018427387903 WHERE id = NEW.id;
END;
CREATE TRIGGER zones_changed AFTER UPDATE ON zones WHEN NEW.revision = OLD.revision BEGIN
    UPDATE zones SET revision = revision + 1 WHERE id = NEW.id;
END;

CREATE TRIGGER records_added AFTER INSERT ON records BEGIN
    UPDATE zones SET revision = revision + 1 WHERE id = NEW.zone_id;
END;
CREATE TRIGGER records_changed AFTER UPDATE ON records BEGIN
    UPDATE zones SET revision = revision + 1 WHERE id IN (OLD.zone_id, NEW.zone_id);
END;
CREATE TRIGGER records_removed AFTER DELETE ON records BEGIN
    UPDATE zones SET revision = revision + 1 WHERE id = OLD.zone_id;
END;

CREATE TRIGGER pools_added AFTER INSERT ON pools BEGIN
    UPDATE zones SET revision = revision + 1 WHERE id = NEW.zone_id;
END;
CREATE TRIGGER pools_changed AFTER UPDATE ON pools BEGIN
    UPDATE zones SET revision = revision + 1 WHERE id IN (OLD.zone_id, NEW.zone_id);
END;
CREATE TRIGGER pools_removed AFTER DELETE ON pools BEGIN
    UPDATE zones SET revision = revision + 1 WHERE id = OLD.zone_id;
END;

CREATE TRIGGER origins_added AFTER INSERT ON origins BEGIN
    UPDATE zones SET revision = revision + 1
    WHERE id = (SELECT zone_id FROM pools WHERE id = NEW.pool_id);
END;
CREATE TRIGGER origins_changed AFTER UPDATE ON origins BEGIN
    UPDATE zones SET revision = revision + 1
    WHERE id IN (SELECT zone_id FROM pools WHERE id IN (OLD.pool_id, NEW.pool_id));
END;
CREATE TRIGGER origins_removed AFTER DELETE ON origins BEGIN
    UPDATE zones SET revision = revision + 1
    WHERE id = (SELECT zone_id FROM pools WHERE id = OLD.pool_id);
END;

CREATE TRIGGER load_balancers_added AFTER INSERT ON load_balancers BEGIN
    UPDATE zones SET revision = revision + 1 WHERE id = NEW.zone_id;
END;
CREATE TRIGGER load_balancers_changed AFTER UPDATE ON load_balancers BEGIN
    UPDATE zones SET revision = revision + 1 WHERE id IN (OLD.zone_id, NEW.zone_id);
END;
CREATE TRIGGER load_balancers_removed AFTER DELETE ON load_balancers BEGIN
    UPDATE zones SET revision = revision + 1 WHERE id = OLD.zone_id;
END;
