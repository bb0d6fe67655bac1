import ipaddr from "ipaddr.js"

export const isIP = (s: string) => ipaddr.IPv4.isValidFourPartDecimal(s) ? 4 : ipaddr.IPv6.isValid(s) ? 6 : 0
