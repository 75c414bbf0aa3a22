"""The release version for what Bazel builds (the client library's SONAME, the .deb).

client/python/src/shotstream/_version.py holds the same string for the Python package;
//deploy:install_test fails when the two disagree.
"""

SHOTSTREAM_VERSION = "0.1.0"

# The client library's ABI version (libshotstream_client.so.SOVERSION): major.minor while
# the major version is 0, since a 0.x release may change the ABI.
SOVERSION = "0.1"
