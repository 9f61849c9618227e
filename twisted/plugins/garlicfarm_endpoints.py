"""garlicfarm's client endpoint strings, ``httpproxy:`` and ``i2p:`` (see garlicfarm.net.endpoint_strings).

Kept tiny: Twisted imports every module here whenever any program looks for plugins.
"""

from garlicfarm.net.endpoint_strings import HTTPProxyEndpointParser, I2PEndpointParser

httpproxy = HTTPProxyEndpointParser()
i2p = I2PEndpointParser()
