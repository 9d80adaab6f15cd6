\set saved_echo :ECHO \set ECHO none
-- error_of(query): the SQLSTATE, message and hint of the error the query raises ('none' if none).
CREATE FUNCTION error_of(q text, OUT state text, OUT message text, OUT hint text)
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    state := 'none';
EXCEPTION WHEN others THEN
    GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT, hint = PG_EXCEPTION_HINT;
END $$;
\pset format unaligned
\pset footer off
\set ECHO :saved_echo
