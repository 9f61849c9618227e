"""I2P's own structures, sans-I/O: base64/base32, Destination, Mapping, LeaseSet2 header with offline
signature, MetaLease and MetaLeaseSet, and the routers' private key files (docs/metals.md).

Bytes in, frozen attrs objects out, and back; signing and verifying through ``cryptography``. No
clock and no randomness that is not passed in.
"""
