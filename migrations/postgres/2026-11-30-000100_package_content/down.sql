DROP TABLE mp_package_contents;
