export const createHmac = () => {
  throw new Error("not in the browser")
}
export const timingSafeEqual = () => {
  throw new Error("not in the browser")
}
