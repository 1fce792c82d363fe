DELETE FROM roles WHERE builtin;
